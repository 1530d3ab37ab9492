/**
 * One origin (docs/one-origin.md): the gateway forwards the agent API's paths to the real
 * control-plane API (owner routes, 4xx, SSE, client addresses) and, for the transport details, to
 * a recording HTTP server standing in for the API (request body streaming, client abort,
 * hop-by-hop headers, hostile spellings); the API down or unconfigured answers a clear 4xx/5xx.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appendEvents, type NewEvent } from '../../../../agent/events/event-store';
import { ADMIN_TOKEN } from '../../../support/admin';
import { createJob, createOwner, createTurn, type TestOwner } from '../../../support/agent-records';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { startTestGateway, type TestGateway } from '../../../support/gateway';
import { rawRequest } from '../../../support/raw-request';
import { SseReader } from '../../../support/sse-reader';
import { waitFor } from '../../../support/wait';
import { unusedLoopbackPort } from '../../../support/ports';

/** What the stand-in API saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Body bytes received so far. */
  bytes: number;
  closedEarly: boolean;
}

/** A recording server: `/stream` answers chunks until the client goes; `/hold` never answers; anything else echoes. */
async function startStandIn(): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const record: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, bytes: 0, closedEarly: false };
    seen.push(record);
    const hash = createHash('sha256');
    res.once('close', () => (record.closedEarly = !res.writableFinished));
    req.on('data', (chunk: Buffer) => {
      record.bytes += chunk.length;
      hash.update(chunk);
    });
    if (req.url === '/v1/agent/stream') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      return;
    }
    if (req.url === '/v1/agent/hold') return;
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json', 'keep-alive': 'timeout=99', 'x-api': 'yes' });
      res.end(JSON.stringify({ bytes: record.bytes, sha256: hash.digest('hex') }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** `answer`, or a failure naming `what` when it has not settled within 10 s: a hang is a failure, with its request named. */
async function within<T>(answer: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within 10 s: ${what}`)), 10_000)));
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

const messages = (from: number, count: number): NewEvent[] =>
  Array.from({ length: count }, (_, i) => ({ turnSeq: 0, attemptId: null, seq: from + i, eventType: 'message' as const, payload: { text: `m${from + i}` } }));

describe('the gateway serves the agent API on its origin (GATEWAY_AGENT_API_URL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let gw: TestGateway;
  let trusting: TestGateway;
  let standIn: Awaited<ReturnType<typeof startStandIn>>;
  let toStandIn: TestGateway;
  const gateways: TestGateway[] = [];
  const clients: AbortController[] = [];

  const gateway = async (env: Record<string, string>): Promise<TestGateway> => {
    const started = await startTestGateway({ env });
    gateways.push(started);
    return started;
  };

  before(async () => {
    t = await freshDatabase();
    // The API trusts its loopback proxy (the gateway), as `npm start` configures it.
    api = await startTestApi({ db: t.db, env: { TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1', AGENT_EVENT_STREAM_HEARTBEAT_SECONDS: '0.3' } });
    owner = await createOwner(t.db);
    gw = await gateway({ GATEWAY_AGENT_API_URL: api.url });
    // A gateway that itself sits behind a trusted loopback proxy (here: the test client).
    trusting = await gateway({ GATEWAY_AGENT_API_URL: api.url, TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1' });
    standIn = await startStandIn();
    toStandIn = await gateway({ GATEWAY_AGENT_API_URL: standIn.url });
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.abort();
  });
  after(async () => {
    for (const g of gateways) await g.close();
    standIn?.server.closeAllConnections();
    standIn?.server.close();
    await api?.close();
    await t?.drop();
  });

  const get = (base: string, path: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${owner.apiKey}`, ...headers } });

  it('answers an owner route through the gateway exactly as the API does directly, and lists the forwarded paths as such', async () => {
    const jobId = await createJob(t.db, owner.userId);
    const direct = await get(api.url, `/v1/agent/jobs/${jobId}`);
    const proxied = await get(gw.url, `/v1/agent/jobs/${jobId}`);
    assert.equal(direct.status, 200);
    assert.equal(proxied.status, 200);
    assert.deepEqual(await proxied.json(), await direct.json());
    assert.match(proxied.headers.get('content-type') ?? '', /application\/json/);
    const forwarded = gw.routes.filter((r) => r.access === 'forwarded').map((r) => r.path);
    assert.deepEqual(forwarded, ['/v1/agent', '/v1/agent/{*rest}', '/admin/agent/{*rest}', '/api/admin/agent/pgadmin', '/api/admin/agent/pgadmin/{*rest}']);
  });

  it('passes the API’s 4xx answers through unchanged (status and body)', async () => {
    const cases: Array<[string, string, Record<string, string>, string | undefined]> = [
      ['GET', '/v1/agent/jobs/job_missing', { authorization: `Bearer ${owner.apiKey}` }, undefined],
      ['GET', '/v1/agent/jobs', {}, undefined],
      ['POST', '/v1/agent/jobs', { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json' }, '{"prompt": 5}'],
      ['GET', '/admin/agent/runner-hosts', { authorization: `Bearer ${owner.apiKey}` }, undefined],
      ['DELETE', '/v1/agent/variables/x', {}, undefined],
      ['GET', '/v1/agent', {}, undefined],
      ['GET', '/api/admin/agent/pgadmin/browser/', {}, undefined],
      // The database tool's tree takes every method: the API's route answers them, not the gateway.
      ['OPTIONS', '/api/admin/agent/pgadmin/browser/', {}, undefined],
      ['PROPFIND', '/api/admin/agent/pgadmin/dav/', { depth: '1' }, '<propfind/>'],
      ['HEAD', '/admin/agent/sandboxes', {}, undefined],
    ];
    for (const [method, path, headers, body] of cases) {
      const direct = await fetch(`${api.url}${path}`, { method, headers, body });
      const proxied = await fetch(`${gw.url}${path}`, { method, headers, body });
      assert.ok(direct.status >= 400 && direct.status < 500, `${method} ${path}: ${direct.status}`);
      assert.equal(proxied.status, direct.status, `${method} ${path}`);
      assert.equal(await proxied.text(), await direct.text(), `${method} ${path}`);
    }
    // A body over the API's limit: the API's 413 comes back, whether or not the API read it all.
    const huge = Buffer.alloc(4 * 1024 * 1024, 'a');
    const tooLarge = await rawRequest(gw.url, { method: 'POST', path: '/v1/agent/jobs', authorization: `Bearer ${owner.apiKey}`, body: huge });
    const tooLargeDirect = await rawRequest(api.url, { method: 'POST', path: '/v1/agent/jobs', authorization: `Bearer ${owner.apiKey}`, body: huge });
    assert.equal(tooLargeDirect.status, 413, tooLargeDirect.body);
    assert.equal(tooLarge.status, 413, tooLarge.body);
    assert.equal(tooLarge.headers.connection, 'close', 'the unread rest of the body ends this connection (the next request gets a new one)');
    assert.equal(tooLarge.body, tooLargeDirect.body);
    const admin = await fetch(`${gw.url}/admin/agent/runner-hosts`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(admin.status, 200, 'an operator route answers through the gateway');
  });

  it('streams a job’s events event by event: each arrives while the API’s stream is still open; a client abort releases the API’s subscription', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0);
    const backlog = await appendEvents(t.db, jobId, messages(0, 2));
    const controller = new AbortController();
    clients.push(controller);
    const res = await fetch(`${gw.url}/v1/agent/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${owner.apiKey}` }, signal: controller.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reader = new SseReader(res);
    await reader.waitForEvents(2);
    assert.equal(reader.ended, false);
    const live = await appendEvents(t.db, jobId, messages(2, 1));
    await reader.waitForEvents(3, 'the live event through the proxy');
    assert.equal(reader.ended, false, 'the event came through while the API stream stays open (the turn is running)');
    assert.deepEqual(reader.events.map((f) => f.id), [...backlog, ...live].map((e) => e.event_id));
    assert.equal(api.deps.events?.subscriberCount(jobId), 1);
    controller.abort();
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 0, 'the API to release the stream’s subscription');
  });

  it('streams a large request body to the API as it arrives, unchanged', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const hash = createHash('sha256');
    const url = new URL(toStandIn.url);
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, method: 'PUT', path: '/v1/agent/upload', headers: { 'content-type': 'application/octet-stream' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      (async () => {
        for (let i = 0; i < 4; i++) {
          req.write(chunk);
          hash.update(chunk);
        }
        // The first half reaches the API before the client has sent the rest: nothing is buffered whole.
        await waitFor(() => standIn.seen.find((s) => s.url === '/v1/agent/upload' && s.bytes >= 3 * chunk.length), 'the first half at the API');
        for (let i = 0; i < 4; i++) {
          req.write(chunk);
          hash.update(chunk);
        }
        req.end();
      })().catch(reject);
    });
    const { status, body } = await answer;
    assert.equal(status, 201);
    assert.deepEqual(JSON.parse(body), { bytes: 8 * chunk.length, sha256: hash.digest('hex') });
  });

  it('aborts the API request when the client goes, on a stream and while waiting for an answer', async () => {
    const streaming = new AbortController();
    const res = await fetch(`${toStandIn.url}/v1/agent/stream`, { signal: streaming.signal });
    assert.equal(res.status, 200, 'the headers arrive before the API has ended its answer');
    const events = await new SseReader(res).waitForEvents(1, 'the first event while the API stream is open');
    assert.equal(events[0]!.data, 'first');
    const stream = standIn.seen.find((s) => s.url === '/v1/agent/stream')!;
    assert.equal(stream.closedEarly, false);
    streaming.abort();
    await waitFor(() => stream.closedEarly, 'the API side of the stream to close');

    const waiting = new AbortController();
    const pending = fetch(`${toStandIn.url}/v1/agent/hold`, { signal: waiting.signal }).catch(() => undefined);
    const hold = await waitFor(() => standIn.seen.find((s) => s.url === '/v1/agent/hold'), 'the held request at the API');
    waiting.abort();
    await pending;
    await waitFor(() => hold.closedEarly, 'the API side of the held request to close');
  });

  it('forwards headers minus hop-by-hop ones, sets X-Forwarded-*, and drops an untrusted client’s forwarding claims', async () => {
    // node:http, not fetch: fetch refuses to send hop-by-hop headers at all.
    const url = new URL(toStandIn.url);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({
        host: url.hostname, port: url.port, method: 'POST', path: '/v1/agent/echo?a=1&b=%2F',
        headers: {
          connection: 'keep-alive, x-hop-named', 'x-hop-named': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'proxy-authorization': 'Basic eDp5',
          'x-forwarded-for': '1.2.3.4', 'x-real-ip': '1.2.3.4', 'x-forwarded-host': 'evil.example', forwarded: 'for=1.2.3.4',
          authorization: 'Bearer owner-credential', 'x-custom': 'kept', 'x-request-id': 'client-id-1', 'content-type': 'text/plain',
        },
      }, resolve);
      req.on('error', reject);
      req.end('hello');
    });
    res.resume();
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers['x-api'], 'yes');
    assert.notEqual(res.headers['keep-alive'], 'timeout=99', 'the API’s Keep-Alive is not relayed');
    const seen = standIn.seen.find((s) => s.url === '/v1/agent/echo?a=1&b=%2F');
    assert.ok(seen, 'the path and query arrive exactly as sent');
    const h = seen.headers;
    for (const name of ['x-hop-named', 'keep-alive', 'te', 'proxy-authorization', 'x-real-ip', 'forwarded']) assert.equal(h[name], undefined, name);
    assert.equal(h['x-forwarded-for'], '127.0.0.1', 'the client’s own XFF is dropped: the gateway does not trust it');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], new URL(toStandIn.url).host);
    assert.equal(h.host, new URL(standIn.url).host);
    assert.equal(h.authorization, 'Bearer owner-credential');
    assert.equal(h['x-custom'], 'kept');
    assert.equal(h['x-request-id'], 'client-id-1', 'one request id in both processes');
    assert.equal(seen.bytes, 5);
    // A body on a GET is forwarded as framed (the API answers it, nothing waits for missing bytes).
    const withBody = await rawRequest(toStandIn.url, { method: 'GET', path: '/v1/agent/get-with-body', body: '{"a":1}' });
    assert.equal(withBody.status, 201);
    assert.equal((JSON.parse(withBody.body) as { bytes: number }).bytes, 7);
    assert.equal((await rawRequest(toStandIn.url, { method: 'DELETE', path: '/v1/agent/no-body' })).status, 201);
  });

  it('lets the API resolve the real client: through a trusting gateway the XFF chain names the client; through another, a claimed address is ignored', async () => {
    const jobId = await createJob(t.db, owner.userId);
    const lineOf = (id: string) => waitFor(() => api.logs.lines.find((l) => l.event === 'http_request' && l.request_id === id), `the API's http_request line ${id}`);
    assert.equal((await get(trusting.url, `/v1/agent/jobs/${jobId}`, { 'x-forwarded-for': '1.2.3.4', 'x-request-id': 'xff-trusted' })).status, 200);
    const trusted = await lineOf('xff-trusted');
    assert.equal(trusted.remote_ip, '1.2.3.4');
    assert.equal(trusted.ip_source, 'x_forwarded_for');
    assert.equal(trusted.x_forwarded_for, '1.2.3.4, 127.0.0.1');
    assert.equal((await get(gw.url, `/v1/agent/jobs/${jobId}`, { 'x-forwarded-for': '1.2.3.4', 'x-request-id': 'xff-untrusted' })).status, 200);
    const untrusted = await lineOf('xff-untrusted');
    assert.equal(untrusted.x_forwarded_for, '127.0.0.1');
    assert.notEqual(untrusted.remote_ip, '1.2.3.4');

    // The audit log's actor_ip is the resolved client too (an operator reading an event's content is audited).
    const [event] = await appendEvents(t.db, jobId, messages(0, 1));
    const read = (base: string) => fetch(`${base}/admin/agent/runs/${jobId}/events/${event!.event_id}/content`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': '1.2.3.4' },
    });
    assert.equal((await read(trusting.url)).status, 200);
    assert.equal((await read(gw.url)).status, 200);
    const rows = await t.db('agent_audit_log').where({ action: 'agent.run.event_content.read' }).orderBy('id').select<Array<{ actor_ip: string }>>('actor_ip');
    assert.deepEqual(rows.map((r) => r.actor_ip.replace(/^::ffff:/, '')), ['1.2.3.4', '127.0.0.1']);
  });

  it('answers 503 naming the agent API when it is down (no hang), and 404 saying where it is when not configured', async () => {
    const down = await gateway({ GATEWAY_AGENT_API_URL: `http://127.0.0.1:${await unusedLoopbackPort()}` });
    const res = await fetch(`${down.url}/v1/agent/jobs`, { headers: { authorization: `Bearer ${owner.apiKey}` } });
    assert.equal(res.status, 503);
    const body = (await res.json()) as { error: { message: string; code: string } };
    assert.match(body.error.message, /agent API at http:\/\/127\.0\.0\.1:\d+ \(GATEWAY_AGENT_API_URL\) is not reachable/);

    const plain = await gateway({});
    assert.equal(plain.routes.some((r) => r.access === 'forwarded'), false);
    const unconfigured = await fetch(`${plain.url}/v1/agent/jobs`, { method: 'POST', body: '{}' });
    assert.equal(unconfigured.status, 404);
    const message = ((await unconfigured.json()) as { error: { message: string } }).error.message;
    assert.match(message, /^No route for POST \/v1\/agent\/jobs on the gateway/);
    assert.match(message, /control-plane API \(API_PORT, default 8081\)/);
    assert.match(message, /set GATEWAY_AGENT_API_URL/);
    const known = await gateway({ AGENT_API_URL: 'http://10.1.2.3:9000' });
    const named = ((await (await fetch(`${known.url}/admin/agent/sandboxes`)).json()) as { error: { message: string } }).error.message;
    assert.match(named, /control-plane API at http:\/\/10\.1\.2\.3:9000/);
  });

  it('leaves inference and other gateway paths alone', async () => {
    const before = standIn.seen.length;
    const chat = await fetch(`${toStandIn.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(chat.status, 404);
    assert.equal(((await chat.json()) as { error: { code: string } }).error.code, 'model_not_found');
    for (const path of ['/v1/agents', '/v1/agentx/jobs', '/admin/agents', '/admin/agent', '/health']) await rawRequest(toStandIn.url, { method: 'GET', path });
    assert.equal(standIn.seen.length, before, 'nothing reached the API');
  });

  it('forwards only canonical spellings: traversal, doubled and encoded slashes and dots are refused, never normalized into another route', async () => {
    const before = standIn.seen.length;
    const hostile = [
      '/v1/agent/../admin/users', '/v1/agent/../../admin/users', '/v1/agent/%2e%2e/admin/users', '/v1/agent/%2E%2E/%2E%2E/internal/grants',
      '/v1/agent/x%2f..%2f..%2fadmin%2fusers', '/v1/agent/x%2F..%2Fadmin', '/admin/agent//sandboxes', '/admin/agent/./sandboxes', '/admin/agent/..',
      '/admin/agent/%5c..%5cusers', '/v1/agent\\..\\admin\\users', '/v1/agent/jobs/.', '/api/admin/agent/pgadmin/../../../admin/users', '//admin/agent/sandboxes',
      '//v1/agent/jobs', '/v1//agent/jobs',
    ];
    for (const path of hostile) {
      const answer = await within(rawRequest(toStandIn.url, { method: 'GET', path, authorization: `Bearer ${ADMIN_TOKEN}` }), `stand-in ${path}`);
      assert.equal(answer.status, 404, `${path}: ${answer.status} ${answer.body}`);
    }
    assert.deepEqual(standIn.seen.slice(before).map((s) => s.url), [], 'none of them reached the API');
    // Against the real API with an operator credential: still nothing opens.
    for (const path of hostile) {
      const answer = await within(rawRequest(gw.url, { method: 'GET', path, authorization: `Bearer ${ADMIN_TOKEN}` }), `api ${path}`);
      assert.equal(answer.status, 404, path);
    }
    const trace = await within(rawRequest(toStandIn.url, { method: 'TRACE', path: '/v1/agent/jobs' }), 'TRACE');
    assert.equal(trace.status, 405);
  });
});
