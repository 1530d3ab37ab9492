/**
 * The drain after an early 413 is bounded (docs/security.md): a client that goes on sending past
 * the byte bound is cut off, and one that stops sending mid-body is closed after the time bound,
 * after reading its 413 in both cases.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { drainRefusedBody } from '../../../../lib/http/refused-body';

/** A server that refuses every body at once with the drain bounds given. */
async function refusingServer(bounds: { maxBytes: number; maxMs: number }): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    drainRefusedBody(req, bounds);
    res.writeHead(413, { connection: 'close', 'content-length': '2' }).end('no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends the head (declaring `declared` bytes), then `bytes` of body while reading; resolves when the socket closes. */
function upload(port: number, declared: number, bytes: number): Promise<{ response: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let response = '';
    let error: string | undefined;
    socket.on('data', (d: Buffer) => { response += d.toString('latin1'); });
    socket.on('error', (err: NodeJS.ErrnoException) => { error = err.code; });
    socket.on('close', () => resolve({ response, ...(error ? { error } : {}) }));
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < bytes && !socket.destroyed) {
        sent += chunk.length;
        if (!socket.write(chunk)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

describe('drain of a refused body', () => {
  it('cuts off a client that sends past the byte bound, after it read the 413', async () => {
    const { server, port } = await refusingServer({ maxBytes: 256 * 1024, maxMs: 60_000 });
    try {
      const outcome = await upload(port, 20 * 1024 * 1024, 20 * 1024 * 1024);
      assert.match(outcome.response, /^HTTP\/1\.1 413 /);
      assert.ok(outcome.error !== undefined, 'the upload did not complete');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('closes a connection whose client stops sending mid-body and keeps its side open, after the time bound', async () => {
    const { server, port } = await refusingServer({ maxBytes: 64 * 1024 * 1024, maxMs: 200 });
    const closed = new Promise<void>((resolve) => server.once('connection', (socket) => socket.once('close', () => resolve())));
    const client = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let response = '';
    client.on('data', (d: Buffer) => { response += d.toString('latin1'); });
    try {
      client.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${20 * 1024 * 1024}\r\n\r\n`);
      client.write(Buffer.alloc(128 * 1024, 0x20));
      await closed;
      assert.match(response, /^HTTP\/1\.1 413 /);
    } finally {
      client.destroy();
      server.close();
    }
  });
});
