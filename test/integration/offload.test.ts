/**
 * Offload execution (docs/routing.md "Offload") through a real gateway, real PostgreSQL and two fake upstreams:
 * a local engine and the offload route. The policy is set through the admin API; waits are small
 * (0.2 s) and nothing asserts on durations, only on which upstream answered, what was aborted,
 * the `route_offload` log line, the request-log row and the admin offload report.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

interface OffloadView { model_id: string; active: boolean; inactive_reason: string | null }
interface LogRow { endpoint_id: string | null; status: number; metadata: { routing?: { offload?: Record<string, unknown>; endpoint_id?: string } } }

describe('offload execution', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let local: FakeUpstream;
  let remote: FakeUpstream;
  let gw: TestGateway | undefined;
  let counter = 0;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  const startGateway = async (env: Record<string, string> = {}, extra: { concurrencyExemptHosts?: string[] } = {}) => {
    gw = await startTestGateway({
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: engine_a, base_url: "${local.url}", provider: local-engine }`, `{ kind: generic_compat, base_url: "${remote.url}", provider: remote }`])}`,
      db: t.db, env: { ADMIN_TOKEN, REQUEST_LOG_FLUSH_INTERVAL_MS: '20', ...env }, ...extra,
    });
  };

  beforeEach(async () => {
    [local, remote] = await startUpstreamPair();
    await t.db('site_settings').delete();
    await t.db('api_logs').delete();
    local.setDefault({ kind: 'sse', pieces: ['local'] });
    remote.setDefault({ kind: 'sse', pieces: ['offloaded'] });
    await startGateway();
  });
  afterEach(async () => {
    await closeAll(gw, local, remote);
    gw = undefined;
  });

  const endpointOf = (index: number) => gw!.deps.registry.current.byName.get('m')!.routes[index]!.endpointId;

  async function policy(body: Record<string, unknown>): Promise<void> {
    const put = await admin(gw!, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 0.2, ...body });
    assert.equal(put.status, 200, JSON.stringify(put.body));
  }

  async function chat(options: { stream: boolean; content?: string }): Promise<{ id: string; status: number; text: string }> {
    const id = `offload-${++counter}`;
    const res = await fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model: 'm', stream: options.stream, messages: [{ role: 'user', content: options.content ?? 'Hi' }] }),
    });
    return { id, status: res.status, text: await res.text() };
  }

  async function rowOf(requestId: string): Promise<LogRow> {
    for (let i = 0; i < 300; i += 1) {
      const row = await t.db('api_logs').where({ request_id: requestId }).first<LogRow | undefined>();
      if (row) return row;
      await new Promise((r) => setTimeout(r, 20));
    }
    return assert.fail(`no api_logs row for ${requestId}`);
  }

  async function eventually(check: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 200 && !check(); i += 1) await new Promise((r) => setTimeout(r, 20));
    assert.ok(check(), what);
  }

  const offloadLines = () => gw!.logs.lines.filter((l) => l.event === 'route_offload');

  it('lists the policy as active and keeps the offload route out of normal rotation', async () => {
    await policy({ engine_queue_limit: 4, max_input_tokens: 20000 });
    const listed = (await admin<{ offload_routes: OffloadView[] }>(gw!, 'GET', '/admin/routing/offload-routes')).body.offload_routes;
    assert.deepEqual(listed.map((o) => [o.model_id, o.active, o.inactive_reason]), [['m', true, null]]);
    local.setDefault({ kind: 'json', content: 'local' });
    for (let i = 0; i < 6; i += 1) assert.equal((await chat({ stream: false })).status, 200);
    assert.equal(local.requests.length, 6);
    assert.equal(remote.requests.length, 0, 'the offload route takes no normal traffic');
    assert.deepEqual(offloadLines(), []);
  });

  it('engine wait: a stream whose local engine sends no first chunk within the wait is offloaded once; the client gets the offload answer', async () => {
    await policy({});
    local.enqueue({ kind: 'slow_first_byte', delayMs: 3000, then: { kind: 'sse', pieces: ['late local'] } });
    const res = await chat({ stream: true });
    assert.equal(res.status, 200);
    assert.match(res.text, /offloaded/);
    assert.doesNotMatch(res.text, /late local/);
    assert.doesNotMatch(res.text, /_routing/, 'the attribution never reaches the client');
    assert.equal(remote.requests.length, 1);
    assert.equal(local.requests.length, 1);
    await eventually(() => local.requests[0]!.aborted, 'the local upstream request was aborted');
    const lines = offloadLines();
    assert.equal(lines.length, 1);
    assert.deepEqual([lines[0]!.level, lines[0]!.model, lines[0]!.reason, lines[0]!.from_endpoint_id, lines[0]!.to_endpoint_id], ['info', 'm', 'engine_wait', endpointOf(0), endpointOf(1)]);

    const row = await rowOf(res.id);
    assert.equal(row.status, 200);
    assert.equal(row.endpoint_id, endpointOf(1));
    assert.deepEqual(row.metadata.routing?.offload, { engine_wait: true });
    const report = await admin<{ offloaded_requests: number; offloads: Array<Record<string, unknown>> }>(gw!, 'GET', '/admin/recent-requests/offloads?model=m');
    assert.equal(report.status, 200);
    assert.equal(report.body.offloaded_requests, 1);
    assert.deepEqual(report.body.offloads, [{ model: 'm', route: endpointOf(1), reason: 'engine_wait', requests: 1, failures: 0, share: 1 }]);
  });

  it('a failed offload is recorded (offload_endpoint_id, counted as a failure); with no other local route the primary error surfaces', async () => {
    await policy({});
    local.enqueue({ kind: 'slow_first_byte', delayMs: 3000, then: { kind: 'sse' } });
    remote.enqueue({ kind: 'status', status: 500, message: 'offload down' });
    const res = await chat({ stream: true });
    assert.equal(res.status, 502);
    assert.equal(remote.requests.length, 1);
    assert.equal(local.requests.length, 1, 'the abandoned local attempt is not tried again');
    assert.equal(offloadLines().length, 1);
    const row = await rowOf(res.id);
    assert.equal(row.status, 502);
    assert.deepEqual(row.metadata.routing?.offload, { engine_wait: true, offload_endpoint_id: endpointOf(1) });
    const report = await admin<{ offloads: Array<Record<string, unknown>> }>(gw!, 'GET', '/admin/recent-requests/offloads');
    assert.deepEqual(report.body.offloads, [{ model: 'm', route: endpointOf(1), reason: 'engine_wait', requests: 1, failures: 1, share: 1 }]);
  });

  it('a non-streaming request is not engine-waited', async () => {
    await policy({});
    local.enqueue({ kind: 'slow_first_byte', delayMs: 600, then: { kind: 'json', content: 'slow local' } });
    const res = await chat({ stream: false });
    assert.equal(res.status, 200);
    assert.match(res.text, /slow local/);
    assert.equal(remote.requests.length, 0);
    assert.deepEqual(offloadLines(), []);
    const row = await rowOf(res.id);
    assert.equal(row.metadata.routing?.offload, undefined);
  });

  it('last resort: a failing local route falls to the offload route', async () => {
    await policy({});
    local.enqueue({ kind: 'status', status: 500, message: 'engine crashed' });
    remote.enqueue({ kind: 'json', content: 'offload answer' });
    const res = await chat({ stream: false });
    assert.equal(res.status, 200);
    assert.match(res.text, /offload answer/);
    assert.deepEqual(offloadLines().map((l) => l.reason), ['last_resort']);
    const row = await rowOf(res.id);
    assert.deepEqual(row.metadata.routing?.offload, { last_resort: true });
    const report = await admin<{ offloads: Array<Record<string, unknown>> }>(gw!, 'GET', '/admin/recent-requests/offloads');
    assert.deepEqual(report.body.offloads.map((o) => [o.route, o.reason]), [[endpointOf(1), 'last_resort']]);
  });

  it('a prompt above max_input_tokens is never offloaded: not engine-waited, and 503 when the local route cannot serve it', async () => {
    await policy({ max_input_tokens: 10 });
    const big = 'x'.repeat(200); // 50 estimated tokens
    local.enqueue({ kind: 'slow_first_byte', delayMs: 600, then: { kind: 'sse', pieces: ['slow local'] } });
    const slow = await chat({ stream: true, content: big });
    assert.equal(slow.status, 200);
    assert.match(slow.text, /slow local/);
    local.enqueue({ kind: 'status', status: 500, message: 'engine crashed' });
    const failed = await chat({ stream: false, content: big });
    assert.equal(failed.status, 503);
    const error = (JSON.parse(failed.text) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, 'no_provider_available');
    assert.match(error.message, /max_input_tokens/);
    assert.equal(remote.requests.length, 0);
    assert.deepEqual(offloadLines(), []);
    // A small prompt under the same policy still offloads.
    local.enqueue({ kind: 'status', status: 500 });
    remote.enqueue({ kind: 'json', content: 'offload answer' });
    assert.equal((await chat({ stream: false })).status, 200);
    assert.equal(remote.requests.length, 1);
  });

  it('queue wait: with the local engine queue full (engine_queue_limit), a request waits for room, then is offloaded', async () => {
    // The first stream is above max_input_tokens: it is never offloaded (so never engine-waited) and holds the only place.
    await policy({ engine_queue_limit: 1, max_input_tokens: 10 });
    local.enqueue({ kind: 'slow_first_byte', delayMs: 1500, then: { kind: 'sse', pieces: ['big local'] } });
    const first = chat({ stream: true, content: 'x'.repeat(200) });
    await local.waitForRequests(1);
    const second = await chat({ stream: true });
    assert.equal(second.status, 200);
    assert.match(second.text, /offloaded/);
    assert.equal(local.requests.length, 1, 'the queued request never reached the local engine');
    assert.deepEqual(offloadLines().map((l) => [l.reason, l.from_endpoint_id, l.to_endpoint_id]), [['queue_wait', endpointOf(0), endpointOf(1)]]);
    assert.deepEqual((await rowOf(second.id)).metadata.routing?.offload, { queue_wait: true });
    const big = await first;
    assert.equal(big.status, 200);
    assert.match(big.text, /big local/);
    assert.equal(gw!.deps.offload.queues.pending(endpointOf(0)), 0, 'the place is given back at the first chunk');
  });

  it('queue wait without engine_queue_limit: the wait for the local route\'s outbound concurrency permit, longer than the acquire timeout, then offload', async () => {
    await gw!.close();
    // 127.0.0.1 is limited here (one permit per lane); the policy's wait (0.4 s) exceeds the acquire timeout (0.1 s).
    await startGateway({ UPSTREAM_CONCURRENCY_INITIAL_LIMIT: '1', UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC: '0.1' }, { concurrencyExemptHosts: [] });
    await policy({ wait_seconds: 0.4, max_input_tokens: 10 });
    local.enqueue({ kind: 'slow_first_byte', delayMs: 700, then: { kind: 'json', content: 'big local' } });
    // The big prompt (never offloaded) holds the local lane's only permit for a while.
    const first = chat({ stream: false, content: 'x'.repeat(200) });
    await local.waitForRequests(1);
    remote.enqueue({ kind: 'json', content: 'offload answer' });
    const second = await chat({ stream: false });
    assert.equal(second.status, 200, second.text);
    assert.match(second.text, /offload answer/);
    assert.deepEqual(offloadLines().map((l) => l.reason), ['queue_wait']);
    assert.equal(local.requests.length, 1);
    assert.match((await first).text, /big local/);
    // A big prompt meeting a full lane keeps the ordinary acquire timeout: it fails over without offloading (503).
    local.enqueue({ kind: 'slow_first_byte', delayMs: 700, then: { kind: 'json', content: 'big local' } });
    const holder = chat({ stream: false, content: 'x'.repeat(200) });
    await local.waitForRequests(2);
    const refused = await chat({ stream: false, content: 'y'.repeat(200) });
    assert.equal(refused.status, 503, refused.text);
    assert.equal(remote.requests.length, 1);
    assert.equal((await holder).status, 200);
  });

  it('the listing reports why a policy is not in force, and such a policy is not executed', async () => {
    await policy({});
    assert.equal((await admin(gw!, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 'routewise' })).status, 200);
    const listed = (await admin<{ offload_routes: OffloadView[] }>(gw!, 'GET', '/admin/routing/offload-routes')).body.offload_routes;
    assert.equal(listed[0]?.active, false);
    assert.match(String(listed[0]?.inactive_reason), /routewise/);
  });
});
