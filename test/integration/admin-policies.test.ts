/**
 * Offload policies and routewise settings (docs/runtime-config.md) against real PostgreSQL: validation,
 * refusals (hybrid models, routes that do not exist), the listing's `active` (or its inactive
 * reason), the refusal to delete a runtime route that is the offload route, restart persistence.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, errorOf, type EndpointCase, assertGuarded } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

interface Offload { model_id: string; route_id: string; wait_seconds: number; engine_queue_limit: number | null; max_input_tokens: number | null; active: boolean; inactive_reason: string | null }

describe('admin offload routes and routewise settings', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let up: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('m', [`{ kind: engine_a, base_url: "${up.url}" }`, `{ kind: generic_compat, base_url: "${up.url}", provider: remote }`])}`
    + chatModelYaml('hybrid', [`{ kind: engine_a, base_url: "${up.url}" }`, `{ kind: generic_compat, base_url: "${up.url}", route_metadata: { hybrid_composition: true } }`])
    + chatModelYaml('single', [`{ kind: engine_a, base_url: "${up.url}" }`]);
  const start = (env: Record<string, string> = {}) => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN, ...env } });
  const offloads = async (g: TestGateway) => (await admin<{ offload_routes: Offload[] }>(g, 'GET', '/admin/routing/offload-routes')).body.offload_routes;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    up = await startFakeUpstream();
    await t.db('site_settings').delete();
    await t.db('provider_route_candidates').delete();
  });
  afterEach(async () => {
    await closeAll(gw, up);
    gw = undefined;
  });

  it('stores an offload policy, lists it active, re-applies after restart, deletes it', async () => {
    gw = await start();
    const put = await admin<Offload>(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 2.5, engine_queue_limit: 4, max_input_tokens: 20000 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body, {
      model_id: 'm', route_id: 'm#1', wait_seconds: 2.5, engine_queue_limit: 4, max_input_tokens: 20000,
      active: true, inactive_reason: null,
    });
    await gw.close();
    gw = await start();
    assert.deepEqual((await offloads(gw)).map((o) => [o.model_id, o.route_id, o.wait_seconds, o.engine_queue_limit, o.max_input_tokens]), [['m', 'm#1', 2.5, 4, 20000]]);
    assert.deepEqual((await admin(gw, 'DELETE', '/admin/routing/offload-routes/m')).body, { model_id: 'm', deleted: true });
    assert.deepEqual(await offloads(gw), []);
    assert.equal((await admin(gw, 'DELETE', '/admin/routing/offload-routes/m')).status, 404);
  });

  it('refuses offload for a routewise model: switched by the admin, or by default under ENABLE_ROUTEWISE', async () => {
    gw = await start();
    assert.equal((await admin(gw, 'PATCH', '/admin/routing/provider-route-strategies/m', { router: 'routewise' })).status, 200);
    const switched = await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 1 });
    assert.equal(switched.status, 400);
    assert.match(errorOf(switched).message, /uses the routewise strategy; offload applies to router fixed only/);
    await gw.close();
    await t.db('site_settings').delete();
    gw = await start({ ENABLE_ROUTEWISE: 'true' });
    const byDefault = await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 1 });
    assert.match(errorOf(byDefault).message, /uses the routewise strategy/);
    await gw.close();
    gw = await start();
    assert.equal((await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 1 })).status, 200, 'fixed without the flag');
  });

  it('refuses hybrid models, a route that does not exist, a model with one route, and invalid fields', async () => {
    gw = await start();
    const hybrid = await admin(gw, 'PUT', '/admin/routing/offload-routes/hybrid', { route_id: 'hybrid#1', wait_seconds: 1 });
    assert.equal(hybrid.status, 400);
    assert.match((hybrid.body as { error: { message: string } }).error.message, /hybrid_composition/);
    assert.equal((await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#9', wait_seconds: 1 })).status, 404);
    assert.equal((await admin(gw, 'PUT', '/admin/routing/offload-routes/nope', { route_id: 'm#1', wait_seconds: 1 })).status, 404);
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/single', { route_id: 'single#0', wait_seconds: 1 }), 'route_id');
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 0 }), 'wait_seconds');
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: -1 }), 'wait_seconds');
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 1, engine_queue_limit: 0 }), 'engine_queue_limit');
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: 'm#1', wait_seconds: 1, max_input_tokens: 1.5 }), 'max_input_tokens');
    assertInvalid(await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { wait_seconds: 1 }), 'route_id');
  });

  it('a runtime offload route cannot be deleted until the policy is cleared', async () => {
    gw = await start();
    const added = await admin<{ route_id: string }>(gw, 'POST', '/admin/routing/provider-route-candidates/m', { base_url: up.url, provider: 'burst' });
    const routeId = added.body.route_id;
    assert.equal((await admin(gw, 'PUT', '/admin/routing/offload-routes/m', { route_id: routeId, wait_seconds: 1 })).status, 200);
    const refused = await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`);
    assert.equal(refused.status, 409);
    assert.match((refused.body as { error: { message: string } }).error.message, /offload route/);
    assert.equal((await admin(gw, 'DELETE', '/admin/routing/offload-routes/m')).status, 200);
    assert.equal((await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`)).status, 200);
  });

  it('lists a stored policy whose route disappeared as inactive with that reason', async () => {
    await t.db('site_settings').insert({ key: 'model_offload_route:m', value: JSON.stringify({ route_id: 'm#5', wait_seconds: 1 }) });
    gw = await start();
    assert.deepEqual((await offloads(gw)).map((o) => [o.active, o.inactive_reason]), [[false, 'offload route m#5 no longer exists']]);
  });

  it('stores routewise settings per model, says they are applied, and validates them', async () => {
    gw = await start();
    const initial = await admin(gw, 'GET', '/admin/routewise/model-settings');
    assert.deepEqual(initial.body.models, {});
    assert.equal(initial.body.installed, true);
    const put = await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { objective: 'cost', max_latency_ms: 3000 } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.models, { m: { objective: 'cost', max_latency_ms: 3000 } });
    assert.equal(put.body.applied, true);
    const limits = await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { objective: 'cost', max_latency_ms: 3000, concurrency_limits: { gpu: 2 }, quota_limits: { team: 1.5 } } });
    assert.deepEqual(limits.body.models, { m: { objective: 'cost', max_latency_ms: 3000, concurrency_limits: { gpu: 2 }, quota_limits: { team: 1.5 } } });
    assertInvalid(await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { concurrency_limits: { gpu: 1.5 } } }), 'settings.concurrency_limits.gpu');
    assert.equal((await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { objective: 'cost', max_latency_ms: 3000 } })).status, 200);
    await gw.close();
    gw = await start();
    assert.deepEqual((await admin(gw, 'GET', '/admin/routewise/model-settings')).body.models, { m: { objective: 'cost', max_latency_ms: 3000 } });
    assertInvalid(await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { objective: 'cheapest' } }), 'settings.objective');
    assertInvalid(await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: { quota: 1 } }), 'settings');
    assert.equal((await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'nope', settings: {} })).status, 404);
    assert.deepEqual((await admin(gw, 'PUT', '/admin/routewise/model-settings', { model_id: 'm', settings: null })).body.models, {});
  });

  const cases: EndpointCase[] = [
    { method: 'GET', path: '/admin/routing/offload-routes' },
    { method: 'PUT', path: '/admin/routing/offload-routes/m', body: { route_id: 'm#1', wait_seconds: 1 } },
    { method: 'DELETE', path: '/admin/routing/offload-routes/m' },
    { method: 'GET', path: '/admin/routewise/model-settings' },
    { method: 'PUT', path: '/admin/routewise/model-settings', body: { model_id: 'm', settings: {} } },
  ];

  it('401 without or with a wrong admin token; 500 Database not configured without a database', async () => {
    gw = await start();
    await assertGuarded(gw, cases, yaml());
  });
});
