/**
 * The routewise strategy through a real gateway, two fake upstreams and PostgreSQL: a concurrency
 * route (limit 1) is used while its slot is free and a concurrent request spills to the on-demand
 * route; the admin strategy switch to `routewise` takes effect live; request-log rows carry the
 * cost at the pricing the schedule puts in force.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

interface LogRow { endpoint_id: string; provider: string; cost_usd: string | number | null }

describe('routewise strategy (gateway)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;
  let counter = 0;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    await t.db('site_settings').delete();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  // Route A: concurrency pool of one slot, priced 3/15 with an always-open window at 1/1 since 2020.
  // Route B: on-demand, priced 2/4, with a schedule that only starts in 2999 (base price now).
  const routeA = (url: string) => `{ kind: generic_compat, base_url: "${url}", provider: paid-a, provider_type: concurrency, concurrency_pool: gpu, concurrency: { limit: 1 },`
    + ` pricing: { prompt: "3", completion: "15" }, pricing_schedule: { effective_at: "2020-01-01T00:00:00Z", windows: [{ start: "00:00", end: "24:00", pricing: { prompt: "1", completion: "1" } }] } }`;
  const routeB = (url: string) => `{ kind: engine_a, base_url: "${url}", provider: demand-b, provider_type: on_demand,`
    + ` pricing: { prompt: "2", completion: "4" }, pricing_schedule: { effective_at: "2999-01-01T00:00:00Z", default: { prompt: "100" } } }`;

  function start(env: Record<string, string> = {}): Promise<TestGateway> {
    const yaml = `models:\n${chatModelYaml('rw', [routeA(a.url), routeB(b.url)], '    router: routewise\n')}`
      + chatModelYaml('f', [routeB(b.url), routeA(a.url)])
      + chatModelYaml('q', [`{ kind: generic_compat, base_url: "${a.url}", provider: quota-a, provider_type: quota, quota_pool: team, quota: { limit: 2 } }`, routeB(b.url)], '    router: routewise\n');
    // rng () => 0: a weighted draw puts the first listed route first (model f: B under fixed).
    return startTestGateway({ modelsYaml: yaml, db: t.db, rng: () => 0, env: { ADMIN_TOKEN, REQUEST_LOG_FLUSH_INTERVAL_MS: '20', ...env } });
  }

  function chat(model: string, id: string): Promise<Response> {
    return fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }] }),
    });
  }

  async function rowOf(requestId: string): Promise<LogRow> {
    return waitFor(() => t.db('api_logs').where({ request_id: requestId }).first<LogRow | undefined>('endpoint_id', 'provider', 'cost_usd'), `the api_logs row of ${requestId}`);
  }

  const nextId = (label: string) => `rw-${label}-${++counter}`;

  it('serves a single request on the concurrency route and spills a concurrent second to on-demand', async () => {
    gw = await start();
    const single = nextId('single');
    assert.equal((await chat('rw', single)).status, 200);
    assert.equal(a.requests.length, 1);
    assert.equal(b.requests.length, 0);

    // Hold the slot: A answers the next request late; once A has it, the pool is full.
    a.enqueue({ kind: 'slow_first_byte', delayMs: 3000, then: { kind: 'json', content: 'held' } });
    const held = nextId('held');
    const first = chat('rw', held);
    await a.waitForRequests(2);
    const spilled = nextId('spilled');
    const second = await chat('rw', spilled);
    assert.equal(second.status, 200);
    assert.equal(b.requests.length, 1, 'the second request went to the on-demand route');
    assert.equal(a.requests.length, 2);
    const firstRes = await first;
    assert.equal(((await firstRes.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, 'held');

    // The slot is free again once the held response closed.
    const after = nextId('after');
    for (let i = 0; i < 100 && gw.deps.routewise.pools.inFlight('gpu') > 0; i += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal((await chat('rw', after)).status, 200);
    assert.equal(a.requests.length, 3);

    // Schedule-aware cost: default fake usage is 12 prompt + 5 completion tokens (4 cached, not priced separately).
    assert.equal(Number((await rowOf(single)).cost_usd), (12 * 1 + 5 * 1) / 1e6, 'route A: the always-open window price');
    const spilledRow = await rowOf(spilled);
    assert.equal(spilledRow.provider, 'demand-b');
    assert.equal(Number(spilledRow.cost_usd), (12 * 2 + 5 * 4) / 1e6, 'route B: base price before its effective_at');
  });

  it('holds the slot while a stream is open and releases it when the client leaves or an attempt fails', async () => {
    gw = await start();
    const inFlight = () => gw!.deps.routewise.pools.inFlight('gpu');
    const settle = async () => {
      for (let i = 0; i < 200 && inFlight() > 0; i += 1) await new Promise((r) => setTimeout(r, 10));
    };
    a.enqueue({ kind: 'stall_after_first_chunk' });
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: controller.signal,
      body: JSON.stringify({ model: 'rw', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    assert.ok(!(await reader.read()).done, 'the first chunk arrived');
    assert.equal(inFlight(), 1, 'the open stream holds the pool slot');
    controller.abort();
    await reader.closed.catch(() => undefined);
    await settle();
    assert.equal(inFlight(), 0, 'released when the client left');

    a.enqueue({ kind: 'status', status: 500 });
    b.enqueue({ kind: 'sse' });
    const failedOver = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'rw', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(failedOver.status, 200);
    await failedOver.text();
    assert.deepEqual([a.requests.length, b.requests.length], [2, 1], 'A failed, B served');
    await settle();
    assert.equal(inFlight(), 0, 'the failed attempt gave its slot back');
  });

  it('spends a quota pool by finished requests, then spills to on-demand, and remembers the day across a restart', async () => {
    gw = await start();
    const ids = [nextId('q1'), nextId('q2')];
    for (const id of ids) assert.equal((await chat('q', id)).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [2, 0], 'both within the quota of 2 requests');
    // Charged when each response closes: wait for both (the source is the route's label, its pool, unit requests).
    const source = { provider: 'quota-a', usage_label: 'team', unit: 'requests' as const };
    for (let i = 0; i < 100 && gw.deps.routewise.pools.quotaUsed(source) < 2; i += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal((await chat('q', nextId('q3'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [2, 1], 'quota spent: on-demand');
    const live = (await admin(gw, 'GET', '/admin/routewise/model-settings')).body.live as { quota_used: unknown[] };
    assert.deepEqual(live.quota_used, [{ ...source, used: 2 }], 'the admin view shows the pool state of this process');
    for (const id of ids) assert.equal((await rowOf(id)).provider, 'quota-a');
    await gw.close();
    gw = await start();
    assert.equal((await chat('q', nextId('q4'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [2, 2], 'after a restart the day\'s use is read back from api_logs');
  });

  it('sees the quota another gateway process spent (periodic re-read of api_logs)', async () => {
    const fastRefresh = { ROUTEWISE_QUOTA_REFRESH_SECONDS: '0.05' };
    gw = await start(fastRefresh);
    const other = await start(fastRefresh);
    try {
      for (const id of [nextId('w1-q1'), nextId('w1-q2')]) assert.equal((await chat('q', id)).status, 200);
      assert.deepEqual([a.requests.length, b.requests.length], [2, 0]);
      const source = { provider: 'quota-a', usage_label: 'team', unit: 'requests' as const };
      for (let i = 0; i < 500 && other.deps.routewise.pools.quotaUsed(source) < 2; i += 1) await new Promise((r) => setTimeout(r, 10));
      const res = await fetch(`${other.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'q', messages: [{ role: 'user', content: 'Hi' }] }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual([a.requests.length, b.requests.length], [2, 1], 'the second process routes to on-demand');
    } finally {
      await other.close();
    }
  });

  it('switches a model to routewise live through the admin strategy endpoint', async () => {
    gw = await start();
    assert.equal((await chat('f', nextId('fixed'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [0, 1], 'fixed: the weighted draw picks B');
    const patched = await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/f', { router: 'routewise' });
    assert.deepEqual(patched.body, { model_id: 'f', router: 'routewise', override: 'routewise' });
    assert.equal((await chat('f', nextId('switched'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [1, 1], 'routewise: the free concurrency slot first');

    // A stored per-model limit of 0 for pool gpu sends the next request to on-demand.
    const put = await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'f', settings: { concurrency_limits: { gpu: 0 } } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal((await chat('f', nextId('limited'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [1, 2]);
  });

  it('routes a model naming no router by routewise under ENABLE_ROUTEWISE=true (deprecated)', async () => {
    gw = await start({ ENABLE_ROUTEWISE: 'true' });
    assert.equal((await chat('f', nextId('flag'))).status, 200);
    assert.deepEqual([a.requests.length, b.requests.length], [1, 0], 'the concurrency route, not the weighted draw');
  });
});
