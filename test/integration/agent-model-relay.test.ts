/**
 * The model relay (activities/agent/model-relay.ts) on a real Unix socket in front of a real HTTP
 * server standing in for the gateway: inference requests pass with the grant in place of any
 * credential the CLI sent and stream back as they are written; every other path or method, and a
 * body over the limit, is refused at the relay and never reaches the gateway; the socket belongs
 * to the member alone and is gone after close.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { relayContainerPort, relayHostDir, startModelRelay, type ModelRelay } from '../../activities/agent/model-relay';

interface Seen { method: string; url: string; headers: IncomingMessage['headers']; body: string }

const GRANT = 'agr_relaytestrelaytestrelaytestrelaytestrelayte';

describe('model relay', function () {
  this.timeout(20_000);
  let gateway: Server;
  let gatewayUrl: string;
  let seen: Seen[] = [];
  let root: string;
  let relay: ModelRelay;

  /** One request over the relay's socket: status, headers, body and when each body chunk arrived. */
  const call = (method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}) => new Promise<{ status: number; headers: IncomingMessage['headers']; body: string; chunks: number[] }>((resolve, reject) => {
    const req = request({ socketPath: relay.socketPath, method, path, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const parts: Buffer[] = [];
      const chunks: number[] = [];
      res.on('data', (c: Buffer) => {
        parts.push(c);
        chunks.push(Date.now());
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString(), chunks }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });

  before(async () => {
    gateway = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts).toString() });
        if (req.url?.startsWith('/v1/responses')) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: one\ndata: {}\n\n');
          setTimeout(() => res.end('event: two\ndata: {}\n\n'), 300);
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'gw-1' }).end(JSON.stringify({ ok: true, path: req.url }));
      });
    });
    await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    root = mkdtempSync(join(tmpdir(), 'relay-'));
    relay = await startModelRelay({ hostDir: relayHostDir(root, 'sbx-relay-test'), uid: 1001, gatewayUrl, grantToken: GRANT, maxBodyBytes: 64 * 1024 });
  });
  after(async () => {
    await relay?.close();
    await new Promise((r) => gateway?.close(r));
    rmSync(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    seen = [];
  });

  it('gives the socket to the member alone (owner uid, mode 0600), in a short per-container directory', () => {
    const stat = statSync(relay.socketPath);
    assert.ok(stat.isSocket());
    assert.equal(stat.uid, 1001);
    assert.equal(stat.mode & 0o777, 0o600);
    assert.match(relay.socketPath, /\/[0-9a-f]{16}\/1001\.sock$/);
    assert.notEqual(relayHostDir(root, 'sbx-relay-test'), relayHostDir(root, 'sbx-other'));
    assert.equal(relayContainerPort(1000), 20_000);
    assert.equal(relayContainerPort(1001), 20_001);
  });

  it('forwards inference requests with the grant in place of the CLI credential, query and body intact', async () => {
    const body = JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    const res = await call('POST', '/v1/messages?beta=true', body, {
      authorization: 'Bearer placeholder', 'x-api-key': 'placeholder', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'x-2025', cookie: 'a=b', 'x-forwarded-for': '10.0.0.1',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body), { ok: true, path: '/v1/messages?beta=true' });
    assert.equal(seen.length, 1);
    const [got] = seen;
    assert.equal(got!.method, 'POST');
    assert.equal(got!.body, body);
    assert.equal(got!.headers.authorization, `Bearer ${GRANT}`);
    assert.equal(got!.headers['x-api-key'], undefined);
    assert.equal(got!.headers.cookie, undefined);
    assert.equal(got!.headers['x-forwarded-for'], undefined);
    assert.equal(got!.headers['anthropic-beta'], 'x-2025');
    assert.ok(!res.body.includes(GRANT) && !JSON.stringify(res.headers).includes(GRANT), 'the grant never goes back to the container');
    for (const path of ['/v1/chat/completions', '/v1/messages/count_tokens']) assert.equal((await call('POST', path, '{}')).status, 200);
    assert.equal((await call('GET', '/v1/models')).status, 200);
    assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['POST /v1/messages?beta=true', 'POST /v1/chat/completions', 'POST /v1/messages/count_tokens', 'GET /v1/models']);
  });

  it('streams the answer as the gateway writes it', async () => {
    const res = await call('POST', '/v1/responses', '{"stream":true}');
    assert.equal(res.status, 200);
    assert.match(res.body, /event: one[\s\S]*event: two/);
    assert.ok(res.chunks.length >= 2 && res.chunks[res.chunks.length - 1]! - res.chunks[0]! >= 200, 'the first event arrived before the gateway ended the stream');
  });

  it('refuses every other path and method at the relay (403), and nothing reaches the gateway', async () => {
    const refused: Array<[string, string]> = [
      ['GET', '/v1/responses'], ['POST', '/admin/keys'], ['POST', '/v1/agent/jobs'], ['GET', '/health'], ['POST', '/v1/chat/completions/../../admin/keys'],
      ['POST', '/v1/embeddings'], ['PUT', '/v1/messages'], ['POST', '//v1/messages'], ['POST', '/V1/MESSAGES'], ['POST', '/v1/messages/'], ['DELETE', '/v1/models'],
    ];
    for (const [method, path] of refused) {
      const res = await call(method, path, method === 'GET' || method === 'DELETE' ? undefined : '{}');
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal((JSON.parse(res.body) as { error: { type: string } }).error.type, 'relay_refused');
    }
    assert.deepEqual(seen, []);
    assert.ok(relay.counts.refused >= refused.length);
  });

  it('refuses a body over the limit (declared or streamed) without forwarding it whole', async () => {
    const big = Buffer.alloc(65 * 1024, 0x61);
    const declared = await call('POST', '/v1/chat/completions', big);
    assert.equal(declared.status, 413);
    const streamed = await new Promise<number | string>((resolve) => {
      const req = request({ socketPath: relay.socketPath, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (err) => resolve(err.message));
      for (let i = 0; i < 80; i += 1) req.write(Buffer.alloc(1024, 0x62));
      req.end();
    });
    assert.ok(streamed === 413 || typeof streamed === 'string', `refused (${String(streamed)})`);
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(seen.every((s) => s.body.length <= 64 * 1024), 'the gateway never received the oversized body');
  });

  it('removes the socket on close', async () => {
    const other = await startModelRelay({ hostDir: relayHostDir(root, 'sbx-closing'), uid: 1002, gatewayUrl, grantToken: GRANT, maxBodyBytes: 1024 });
    assert.ok(existsSync(other.socketPath));
    await other.close();
    assert.ok(!existsSync(other.socketPath));
  });
});
