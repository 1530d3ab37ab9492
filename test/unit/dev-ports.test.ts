/**
 * `npm start`'s port check (ops/dev/ports.ts) on real loopback sockets: a taken port is refused
 * with a message naming the port and the variable that moves it; free ports pass.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { assertPortsFree, portIsFree } from '../../ops/dev/ports';

async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('npm start port check', () => {
  it('refuses a taken port, naming it and its variable, and passes once it is free', async () => {
    const taken = await listening();
    const other = await listening();
    await close(other.server);
    const planned = [
      { name: 'gateway', host: '127.0.0.1', port: taken.port, variable: 'GATEWAY_PORT' },
      { name: 'api', host: '127.0.0.1', port: other.port, variable: 'API_PORT' },
    ];
    try {
      assert.equal(await portIsFree('127.0.0.1', taken.port), false);
      await assert.rejects(assertPortsFree(planned), (err: Error) => {
        assert.equal(err.message, `gateway port ${taken.port} (GATEWAY_PORT) is already in use, perhaps by another npm start. Stop it, or move this stack: GATEWAY_PORT=${taken.port + 10} npm start`);
        return true;
      });
    } finally {
      await close(taken.server);
    }
    await assertPortsFree(planned);
  });

  it('names every taken port at once', async () => {
    const a = await listening();
    const b = await listening();
    try {
      await assert.rejects(assertPortsFree([
        { name: 'gateway', host: '127.0.0.1', port: a.port, variable: 'GATEWAY_PORT' },
        { name: 'api', host: '127.0.0.1', port: b.port, variable: 'API_PORT' },
      ]), (err: Error) => err.message.startsWith(`gateway port ${a.port} (GATEWAY_PORT), api port ${b.port} (API_PORT) are already in use`));
    } finally {
      await close(a.server);
      await close(b.server);
    }
  });
});
