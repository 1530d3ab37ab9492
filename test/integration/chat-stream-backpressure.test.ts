/**
 * The gateway buffers no stream: while a client reads a long answer slowly, the gateway stops
 * reading from the upstream (its socket fills and the upstream's writes wait), and the whole
 * answer still arrives intact, in order, once the client reads again. A client that asked for
 * `Connection: close` has its connection closed after the stream (no keep-alive forced on it).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

/** One SSE event of ~4 KiB whose content carries its sequence number. */
function event(i: number): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: `#${i}#${'z'.repeat(4000)}` }, finish_reason: null }] })}\n\n`;
}

describe('chat streams under a slow client', () => {
  const EVENTS = 12_000; // ~48 MiB: far more than every socket buffer on the way together
  let upstream: Server;
  let gw: TestGateway | undefined;
  let client: Socket | undefined;
  let sent = 0;

  before(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const pump = (): void => {
          while (sent < EVENTS) {
            const ok = res.write(event(sent));
            sent += 1;
            if (!ok) {
              res.once('drain', pump);
              return;
            }
          }
          res.end('data: [DONE]\n\n');
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as AddressInfo;
    gw = await startTestGateway({ modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "http://127.0.0.1:${port}/v1", provider: slow }`])}` });
  });

  after(async () => {
    client?.destroy();
    await gw?.close();
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it('holds the upstream back while the client does not read, then delivers every event in order', async () => {
    const { hostname, port } = new URL(gw!.url);
    const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'long answer please' }] });
    const socket = connect(Number(port), hostname);
    client = socket;
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    socket.pause(); // read nothing for now

    // The upstream writes until every buffer between it and the idle client is full, then waits.
    await waitFor(() => sent > 0, 'the upstream to start');
    let plateau = -1;
    await waitFor(async () => {
      const before = sent;
      await new Promise((r) => setTimeout(r, 300));
      if (sent !== before) return false;
      plateau = sent;
      return true;
    }, 'the upstream to be held back', 30_000);
    assert.ok(plateau < EVENTS / 2, `the upstream was held back at ${plateau} of ${EVENTS} events`);

    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await closed;
    const text = Buffer.concat(chunks).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 200/);
    const seen = [...text.matchAll(/#(\d+)#/g)].map((m) => Number(m[1]));
    assert.equal(seen.length, EVENTS);
    assert.ok(seen.every((n, i) => n === i), 'events in upstream order, none lost or repeated');
    assert.match(text, /data: \[DONE\]/);
  });
});
