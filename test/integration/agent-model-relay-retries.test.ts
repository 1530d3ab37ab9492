/**
 * The model relay's retries (activities/agent/relay-retry.ts) on a real Unix socket in front of a
 * real HTTP server standing in for the gateway: a retryable answer is retried with the drivers'
 * policy (Retry-After honoured) and the same body, the answer that ends it goes to the CLI; a
 * stream already started is never repeated; a Retry-After above 60 s ends the retries with a
 * reason; an unreachable gateway is retried until the turn's deadline; tool relay calls are not
 * retried.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { relayHostDir, startModelRelay, TOOL_RELAY_MCP_PATH, type ModelRelay, type ModelRelayOptions } from '../../activities/agent/model-relay';
import type { RelayRetry } from '../../activities/agent/relay-retry';

type Answer = (res: ServerResponse) => void;

const GRANT = 'agr_retrytestretrytestretrytestretrytestretryt';

const status = (code: number, retryAfter?: string): Answer => (res) => {
  res.writeHead(code, { 'content-type': 'application/json', ...(retryAfter ? { 'retry-after': retryAfter } : {}) }).end(JSON.stringify({ error: { message: `gateway says ${code}` } }));
};

describe('model relay retries', function () {
  this.timeout(30_000);
  let gateway: Server;
  let gatewayUrl: string;
  let script: Answer[] = [];
  let bodies: string[] = [];
  let root: string;
  const relays: ModelRelay[] = [];

  const start = async (overrides: Partial<ModelRelayOptions> = {}) => {
    const relay = await startModelRelay({
      hostDir: relayHostDir(root, `sbx-retry-${relays.length}`), uid: 1001, gatewayUrl, grantToken: GRANT, maxBodyBytes: 64 * 1024,
      retries: { deadline: Date.now() + 60_000, random: () => 0 }, ...overrides,
    });
    relays.push(relay);
    return relay;
  };

  const call = (relay: ModelRelay, path: string, body: string) => new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
    const req = request({ socketPath: relay.socketPath, method: 'POST', path, headers: { 'content-type': 'application/json' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      res.on('error', (err) => resolve({ error: err.message }));
    });
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });

  before(async () => {
    gateway = createServer((req: IncomingMessage, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(parts).toString());
        (script.shift() ?? status(200))(res);
      });
    });
    await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    root = mkdtempSync(join(tmpdir(), 'relay-retry-'));
  });
  after(async () => {
    for (const relay of relays) await relay.close();
    await new Promise((r) => gateway?.close(r));
    rmSync(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    script = [];
    bodies = [];
  });

  it('retries two 503s (one with Retry-After: 1) with the same body, then passes the answer on', async () => {
    const seen: RelayRetry[] = [];
    const relay = await start({ retries: { deadline: Date.now() + 60_000, random: () => 0, onRetry: (r) => seen.push(r) } });
    script = [status(503, '1'), status(503), (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')];
    const answer = await call(relay, '/v1/messages', '{"model":"m","n":1}');
    assert.deepEqual(answer, { status: 200, body: '{"ok":true}' });
    assert.deepEqual(bodies, Array(3).fill('{"model":"m","n":1}'), 'three tries, the same body each time');
    const expected = [
      { attempt: 1, waitMs: 1000, status: 503, retryAfter: 1, reason: 'HTTP 503' },
      { attempt: 2, waitMs: 1000, status: 503, reason: 'HTTP 503' },
    ];
    assert.deepEqual(relay.retries, expected, 'Retry-After 1 s honoured, then the policy backoff of retry 2 (no jitter)');
    assert.deepEqual(seen, expected, 'each retry reported');
    assert.equal(relay.gaveUp(), undefined);
  });

  it('never repeats a stream already started', async () => {
    const relay = await start();
    script = [(res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: one\ndata: {}\n\n');
      setTimeout(() => res.destroy(), 100);
    }];
    const answer = await call(relay, '/v1/responses', '{"stream":true}');
    assert.ok('error' in answer || !answer.body.includes('event: two'), JSON.stringify(answer));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(bodies.length, 1, 'the gateway was called once');
    assert.deepEqual(relay.retries, []);
  });

  it('gives up when Retry-After asks for more than 60 s, passing the answer on with the reason recorded', async () => {
    const relay = await start();
    script = [status(503, '120')];
    const answer = await call(relay, '/v1/chat/completions', '{}');
    assert.deepEqual(answer, { status: 503, body: JSON.stringify({ error: { message: 'gateway says 503' } }) });
    assert.equal(bodies.length, 1);
    assert.equal(relay.gaveUp(), 'The gateway answered HTTP 503 and the model relay stopped retrying: the required delay of 120 s exceeds 60 s');
  });

  it('retries an unreachable gateway until the turn deadline, then answers 502 with the reason', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const relay = await start({ gatewayUrl: deadUrl, retries: { deadline: Date.now() + 2500, random: () => 0 } });
    const answer = await call(relay, '/v1/messages', '{}');
    assert.ok('status' in answer && answer.status === 502, JSON.stringify(answer));
    assert.match(answer.body, /could not reach the gateway .*stopped retrying: waiting would pass the turn deadline/);
    assert.deepEqual(relay.retries.map((r) => [r.status, r.waitMs]), [[null, 500], [null, 1000]]);
  });

  it('does not retry tool relay calls (they may have had their effect)', async () => {
    const relay = await start({ toolRelay: { apiUrl: gatewayUrl, credential: 'res_x' } });
    script = [status(503)];
    const answer = await call(relay, TOOL_RELAY_MCP_PATH, '{"jsonrpc":"2.0"}');
    assert.ok('status' in answer && answer.status === 503);
    assert.equal(bodies.length, 1);
    assert.deepEqual(relay.retries, []);
  });
});
