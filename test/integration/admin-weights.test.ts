/**
 * Admin routing listing, weight overrides and strategy switch (docs/runtime-config.md) against real
 * PostgreSQL: listing tags, GET/PUT/DELETE of weights, log events, live traffic shift between
 * two fake upstreams, and re-application after a restart on the same database.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, type EndpointCase, assertGuarded } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { seededRng } from '../../gateway/routing/weighted-order';

interface RouteView { route_id: string; endpoint_id: string; source: string; provider: string; weight: number; weight_override: number | null; effective_weight: number; published: boolean; exclusion_reasons: string[] }

describe('admin routing: listing, weights, strategy', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('m', [
    `{ kind: generic_compat, base_url: "${a.url}", api_key: key-a, provider: route-a }`,
    `{ kind: engine_a, base_url: "${b.url}", provider: route-b }`,
  ])}`;
  const start = (env: Record<string, string> = {}) => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN, ...env }, rng: seededRng(7) });

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    await t.db('provider_weight_overrides').delete();
    await t.db('site_settings').delete();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  async function routes(g: TestGateway): Promise<RouteView[]> {
    const listing = await admin<{ model_id: string; routes: RouteView[] }>(g, 'GET', '/admin/routing/provider-routes/m');
    assert.equal(listing.status, 200);
    return listing.body.routes;
  }

  async function send(g: TestGateway, n: number): Promise<void> {
    for (let i = 0; i < n; i += 1) {
      const response = await fetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
      assert.equal(response.status, 200);
      await response.text();
    }
  }

  it('lists every route tagged source yaml, in /admin/routing and provider-routes', async () => {
    gw = await start();
    const all = await admin<{ models: Array<{ id: string; source: string; router: string; routes: RouteView[] }> }>(gw, 'GET', '/admin/routing');
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.models.map((m) => [m.id, m.source, m.router]), [['m', 'yaml', 'fixed']]);
    const listed = await routes(gw);
    assert.deepEqual(listed.map((r) => [r.route_id, r.source, r.provider, r.effective_weight]), [['m#0', 'yaml', 'route-a', 1], ['m#1', 'yaml', 'route-b', 1]]);
    const flat = await admin<{ routes: RouteView[] }>(gw, 'GET', '/admin/routing/provider-routes');
    assert.equal(flat.body.routes.length, 2);
    assert.equal((await admin(gw, 'GET', '/admin/routing/provider-routes/nope')).status, 404);
  });

  it('an admin weight override of 0 moves live traffic off that endpoint, logged route_weight_zeroed', async () => {
    gw = await start();
    await send(gw, 40);
    const before = [a.requests.length, b.requests.length];
    assert.ok(before[0]! > 5 && before[1]! > 5, `both upstreams served at weight 1:1 (${before.join('/')})`);

    const endpoint = (await routes(gw))[1]!.endpoint_id;
    const put = await admin(gw, 'PUT', `/admin/routing/weights/m/${endpoint}`, { weight: 0 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body, { model_id: 'm', endpoint_id: endpoint, route_id: 'm#1', source: 'yaml', yaml_weight: 1, override: 0, effective: 0, reasons: ['admin weight override of 0'] });
    assert.ok(gw.logs.lines.some((l) => l.event === 'route_weight_zeroed' && l.endpoint_id === endpoint && l.level === 'warn'));

    await send(gw, 40);
    assert.equal(a.requests.length - before[0]!, 40, 'every later request went to route A');
    assert.equal(b.requests.length, before[1], 'route B (weight 0) got nothing, not even as fallback');

    const listed = await routes(gw);
    assert.equal(listed[1]!.published, false);
    assert.deepEqual(listed[1]!.exclusion_reasons, ['admin weight override of 0']);
  });

  it('weight 0 is not used as fallback: route A failing gives an error, not route B', async () => {
    gw = await start();
    const endpoint = (await routes(gw))[1]!.endpoint_id;
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${endpoint}`, { weight: 0 })).status, 200);
    a.setDefault({ kind: 'status', status: 503 });
    const response = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(response.status, 502);
    assert.equal(b.requests.length, 0);
  });

  it('shifts the ratio with a non-zero override (route_weight_overridden) and DELETE restores the file weight', async () => {
    gw = await start();
    const endpointB = (await routes(gw))[1]!.endpoint_id;
    const put = await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: 9 });
    assert.equal(put.body.effective, 9);
    assert.ok(gw.logs.lines.some((l) => l.event === 'route_weight_overridden' && l.level === 'info' && l.effective_weight === 9));
    await send(gw, 100);
    assert.ok(b.requests.length > 2 * a.requests.length, `B got most traffic at 9:1 (${a.requests.length}/${b.requests.length})`);

    const got = await admin(gw, 'GET', `/admin/routing/weights/m/${endpointB}`);
    assert.deepEqual([got.body.yaml_weight, got.body.override, got.body.effective], [1, 9, 9]);
    const del = await admin(gw, 'DELETE', `/admin/routing/weights/m/${endpointB}`);
    assert.deepEqual([del.status, del.body.override, del.body.effective, del.body.removed], [200, null, 1, true]);
  });

  it('re-applies weight overrides after a restart on the same database', async () => {
    gw = await start();
    const endpointB = (await routes(gw))[1]!.endpoint_id;
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: 0 })).status, 200);
    await gw.close();
    gw = await start();
    const listed = await routes(gw);
    assert.deepEqual(listed.map((r) => r.effective_weight), [1, 0]);
    assert.ok(gw.logs.lines.some((l) => l.event === 'route_weight_zeroed'), 'logged again at startup');
    await send(gw, 10);
    assert.equal(b.requests.length, 0);
  });

  it('another process picks the change up through the change marker', async () => {
    gw = await start();
    const other = await start();
    try {
      const endpointB = (await routes(gw))[1]!.endpoint_id;
      assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: 0 })).status, 200);
      await other.deps.runtimeConfig.reloadIfChanged();
      assert.equal(other.deps.registry.current.byName.get('m')!.routes[1]!.weight, 0);
    } finally {
      await other.close();
    }
  });

  it('rejects invalid weights (400 naming weight) and unknown model or endpoint (404)', async () => {
    gw = await start();
    const endpointB = (await routes(gw))[1]!.endpoint_id;
    assertInvalid(await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: -1 }), 'weight');
    assertInvalid(await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: 'heavy' }), 'weight');
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/nope/${endpointB}`, { weight: 1 })).status, 404);
    assert.equal((await admin(gw, 'PUT', '/admin/routing/weights/m/ep_unknown', { weight: 1 })).status, 404);
    assert.equal((await admin(gw, 'GET', '/admin/routing/weights/m/ep_unknown')).status, 404);
    assert.equal((await admin(gw, 'DELETE', '/admin/routing/weights/m/ep_unknown')).status, 404);
  });

  it('switches the strategy: fixed and routewise accepted, unknown refused naming router, unknown model 404', async () => {
    gw = await start();
    const ok = await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 'fixed' });
    assert.deepEqual(ok.body, { model_id: 'm', router: 'fixed', override: 'fixed' });
    assertInvalid(await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 'bogus' }), 'router');
    assert.deepEqual((await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 'routewise' })).body, { model_id: 'm', router: 'routewise', override: 'routewise' });
    assertInvalid(await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 3 }), 'router');
    assert.equal((await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/nope', { router: 'fixed' })).status, 404);
  });

  it('a stored strategy that cannot be applied is logged and skipped at startup', async () => {
    await t.db('site_settings').insert({ key: 'model_router:m', value: JSON.stringify('fastest') });
    gw = await start();
    const count = () => gw!.logs.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('saved setting not applied as stored: strategy "fastest" of model m')).length;
    assert.equal(count(), 1);
    assert.equal((await admin(gw, 'GET', '/admin/routing')).status, 200);
    const endpoint = (await routes(gw))[0]!.endpoint_id;
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${endpoint}`, { weight: 2 })).status, 200);
    assert.equal(count(), 1, 'logged once, not again on every reload');
  });

  const cases: EndpointCase[] = [
    { method: 'GET', path: '/admin/routing' },
    { method: 'GET', path: '/admin/routing/provider-routes' },
    { method: 'GET', path: '/admin/routing/provider-routes/m' },
    { method: 'GET', path: '/admin/routing/weights/m/ep_x' },
    { method: 'PUT', path: '/admin/routing/weights/m/ep_x', body: { weight: 1 } },
    { method: 'DELETE', path: '/admin/routing/weights/m/ep_x' },
    { method: 'PATCH', path: '/admin/routing/provider-route-strategies/m', body: { router: 'fixed' } },
  ];

  it('401 without or with a wrong admin token; 500 Database not configured without a database', async () => {
    gw = await start();
    await assertGuarded(gw, cases, yaml());
  });
});
