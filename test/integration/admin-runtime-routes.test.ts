/**
 * Runtime models, runtime routes and retargets of file routes (docs/runtime-config.md) against
 * real PostgreSQL and fake upstreams: created through the admin API, callable through
 * `/v1/chat/completions`, tagged `runtime`/`override`, re-applied after a restart.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, type EndpointCase, assertGuarded } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { startFakeMessagesUpstream } from '../support/fake-messages-upstream';
import { startFakeResponsesUpstream } from '../support/fake-responses-upstream';

interface RouteView { route_id: string; endpoint_id: string; source: string; kind: string; provider: string; base_url: string; provider_model_id: string; keys: Array<{ prefix: string; fingerprint: string }> }
interface ModelView { id: string; source: string; required_role: string | null; context_length: number; max_output_length: number; routes: RouteView[] }

const SECRET = 'sk-runtime-secret-value-1234567890';

describe('admin runtime models, runtime routes and retargets', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${a.url}", api_key: key-a, provider: route-a }`])}`;
  const start = () => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN }, rng: () => 0 });

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    for (const table of ['provider_route_candidates', 'provider_route_configs', 'provider_weight_overrides', 'site_settings']) await t.db(table).delete();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  function chat(g: TestGateway, model: string): Promise<Response> {
    return fetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  }

  const createModel = (g: TestGateway, extra: Record<string, unknown> = {}) => admin<ModelView>(g, 'POST', '/admin/routing/provider-route-models', {
    id: 'rt-model', route: { base_url: b.url, api_key: SECRET, provider_model_id: 'upstream-rt' }, ...extra,
  });

  it('creates a runtime model with catalog defaults and required_role admin; it is callable and survives a restart', async () => {
    gw = await start();
    const created = await createModel(gw);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const model = created.body;
    assert.deepEqual([model.id, model.source, model.required_role, model.context_length, model.max_output_length], ['rt-model', 'runtime', 'admin', 8192, 4096]);
    assert.equal(model.routes[0]!.source, 'runtime');
    assert.equal(JSON.stringify(model).includes(SECRET), false, 'the key never appears in a response');
    assert.equal(model.routes[0]!.keys.length, 1);

    const response = await chat(gw, 'rt-model');
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(b.requests.length, 1);
    assert.equal((b.requests[0]!.body as { model: string }).model, 'upstream-rt');
    assert.equal(b.requests[0]!.headers.authorization, `Bearer ${SECRET}`);
    assert.equal(gw.logs.lines.some((l) => JSON.stringify(l).includes(SECRET)), false, 'the key never appears in a log line');

    const listed = await admin<{ data: Array<{ id: string }> }>(gw, 'GET', '/v1/models');
    assert.ok(listed.body.data.some((m) => m.id === 'rt-model'));

    await gw.close();
    gw = await start();
    const again = await chat(gw, 'rt-model');
    assert.equal(again.status, 200);
    assert.equal(gw.deps.registry.current.byName.get('rt-model')?.requiredRole, 'admin');
    assert.throws(() => gw!.deps.registry.resolve('rt-model', 'free', 'chat'), /does not exist or you do not have access/);
  });

  it('a runtime model on a message-format kind is verified with a messages call and served through chat completions', async () => {
    const upstream = await startFakeMessagesUpstream();
    try {
      gw = await start();
      const route = { kind: 'vendor_h_direct', base_url: upstream.origin, api_key: SECRET, provider_model_id: 'family-4.6' };
      upstream.enqueue({ kind: 'message', content: [{ type: 'text', text: 'pong' }] });
      const verified = await admin(gw, 'POST', '/admin/routing/provider-route-model-verifications', { id: 'msg-model', route });
      assert.deepEqual([verified.status, verified.body.ok, verified.body.probe, verified.body.url], [200, true, 'chat', `${upstream.origin}/v1/messages`], JSON.stringify(verified.body));
      assert.equal(upstream.requests[0]!.headers['x-api-key'], SECRET);
      assert.deepEqual(upstream.requests[0]!.body, { model: 'family-4.6', messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 });

      const created = await admin<ModelView>(gw, 'POST', '/admin/routing/provider-route-models', { id: 'msg-model', route });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.routes[0]!.kind, 'vendor_h_direct');
      upstream.enqueue({ kind: 'message', content: [{ type: 'text', text: 'hello from messages' }] });
      const response = await chat(gw, 'msg-model');
      assert.equal(response.status, 200, await response.clone().text());
      const completion = await response.json() as { choices: Array<{ message: { content: string } }> };
      assert.equal(completion.choices[0]!.message.content, 'hello from messages');
      assert.equal(upstream.requests[1]!.path, '/v1/messages');
      assert.equal(gw.logs.lines.some((l) => JSON.stringify(l).includes(SECRET)), false, 'the key never appears in a log line');
    } finally {
      await upstream.close();
    }
  });

  it('a runtime model on a Responses-API upstream (upstream_api: responses) is verified with a Responses call and served on /v1/responses', async () => {
    const upstream = await startFakeResponsesUpstream();
    try {
      upstream.script(() => ({ output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'pong from responses' }] }] }));
      gw = await start();
      const route = { kind: 'generic_compat', base_url: upstream.url, api_key: SECRET, provider_model_id: 'resp-upstream', upstream_api: 'responses' };
      const verified = await admin(gw, 'POST', '/admin/routing/provider-route-model-verifications', { id: 'resp-model', route });
      assert.deepEqual([verified.status, verified.body.ok, verified.body.url], [200, true, `${upstream.url}/responses`], JSON.stringify(verified.body));
      assert.equal(upstream.requests[0]!.body.model, 'resp-upstream');
      assert.equal(upstream.requests[0]!.body.input, 'ping');

      const created = await admin<ModelView & { routes: Array<RouteView & { upstream_api: string }> }>(gw, 'POST', '/admin/routing/provider-route-models', { id: 'resp-model', route });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.routes[0]!.upstream_api, 'responses');
      const response = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'resp-model', input: 'hi' }) });
      assert.equal(response.status, 200, await response.clone().text());
      assert.match(await response.text(), /pong from responses/);
      assert.equal(upstream.requests.at(-1)!.path, '/v1/responses');
      assert.equal(upstream.requests.at(-1)!.body.model, 'resp-upstream');

      const wrongKind = await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'resp-model-2', route: { ...route, kind: 'vendor_h_direct' } });
      assert.equal(wrongKind.status, 400, JSON.stringify(wrongKind.body));
      assert.match(JSON.stringify(wrongKind.body), /upstream_api 'responses' needs a chat-completions-compatible kind/);
      const wrongValue = await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'resp-model-3', route: { ...route, upstream_api: 'soap' } });
      assert.equal(wrongValue.status, 400, JSON.stringify(wrongValue.body));
    } finally {
      await upstream.close();
    }
  });

  it('refuses invalid runtime models (400 naming the field) and a taken id (409)', async () => {
    gw = await start();
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { route: { base_url: b.url } }), 'id');
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'x', route: { base_url: 'ftp://nope' } }), 'route.base_url');
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'x', route: {} }), 'base_url');
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'x', route: { base_url: b.url, kind: 'nope' } }), 'kind');
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'x', route: { base_url: b.url }, required_role: 'god' }), 'required_role');
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'x', route: { base_url: b.url }, router: 'bogus' }), 'router');
    assert.equal((await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'm', route: { base_url: b.url } })).status, 409);
  });

  it('verifies a runtime model without saving it', async () => {
    gw = await start();
    const verified = await admin(gw, 'POST', '/admin/routing/provider-route-model-verifications', { id: 'try-me', route: { base_url: b.url, api_key: SECRET } });
    assert.equal(verified.status, 200);
    assert.equal(verified.body.ok, true);
    assert.equal(verified.body.saved, false);
    assert.equal(b.requests.length, 1);
    assert.equal(b.requests[0]!.path, '/v1/chat/completions');
    assert.equal(JSON.stringify(verified.body).includes(SECRET), false);
    assert.equal(gw.deps.registry.current.byName.has('try-me'), false, 'nothing was registered');
    b.setDefault({ kind: 'status', status: 401 });
    const failed = await admin(gw, 'POST', '/admin/routing/provider-route-model-verifications', { id: 'try-me', route: { base_url: b.url } });
    assert.deepEqual([failed.body.ok, failed.body.status], [false, 401]);
  });

  it('adds, changes and deletes a runtime route of a file model', async () => {
    gw = await start();
    const added = await admin<RouteView>(gw, 'POST', '/admin/routing/provider-route-candidates/m', { base_url: b.url, provider: 'extra-b', weight: 1 });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.source, 'runtime');
    assert.equal(added.body.provider, 'extra-b');
    const routeId = added.body.route_id;
    assert.match(routeId, /^m#c\d+$/);

    const pin = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-route-pin': 'extra-b' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(pin.status, 200);
    assert.equal(b.requests.length, 1);

    const patched = await admin<RouteView>(gw, 'PATCH', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`, { provider_model_id: 'renamed' });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([patched.body.provider_model_id, patched.body.endpoint_id, patched.body.base_url], ['renamed', added.body.endpoint_id, b.url]);
    assertInvalid(await admin(gw, 'PATCH', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`, { weight: -2 }), 'weight');
    assert.equal((await admin(gw, 'PATCH', `/admin/routing/provider-route-candidates/m/${encodeURIComponent('m#c999999')}`, { weight: 1 })).status, 404);
    assert.equal((await admin(gw, 'PATCH', `/admin/routing/provider-route-candidates/m/${encodeURIComponent('m#0')}`, { weight: 1 })).status, 404);

    const deleted = await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(gw.deps.registry.current.byName.get('m')!.routes.map((r) => r.routeId), ['m#0']);
    assert.equal((await admin(gw, 'POST', '/admin/routing/provider-route-candidates/nope', { base_url: b.url })).status, 404);
    assertInvalid(await admin(gw, 'POST', '/admin/routing/provider-route-candidates/m', { base_url: 12 }), 'base_url');
  });

  it('verifies a runtime route without saving; refuses deleting the last route of a runtime model', async () => {
    gw = await start();
    const verified = await admin(gw, 'POST', '/admin/routing/provider-route-candidate-verifications/m', { base_url: b.url });
    assert.deepEqual([verified.status, verified.body.ok, verified.body.saved], [200, true, false]);
    assert.equal(gw.deps.registry.current.byName.get('m')!.routes.length, 1);
    const created = await createModel(gw);
    const only = created.body.routes[0]!.route_id;
    const refused = await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/rt-model/${encodeURIComponent(only)}`);
    assert.equal(refused.status, 409);
    const foreign = `m#c${only.split('#c')[1]}`;
    assert.equal((await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(foreign)}`)).status, 404, "another model's runtime route is not reachable through m");
  });

  it('retargets a file route (source override, same endpoint_id), verifies, and DELETE restores it', async () => {
    gw = await start();
    const before = gw.deps.registry.current.byName.get('m')!.routes[0]!;
    const path = `/admin/routing/provider-routes/m/${encodeURIComponent('m#0')}`;
    const put = await admin<RouteView>(gw, 'PUT', path, { base_url: b.url, provider_model_id: 'moved', api_key: SECRET });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual([put.body.source, put.body.endpoint_id, put.body.base_url, put.body.provider_model_id], ['override', before.endpointId, b.url, 'moved']);
    assert.equal(JSON.stringify(put.body).includes(SECRET), false);
    assert.equal((await chat(gw, 'm')).status, 200);
    assert.equal(b.requests.length, 1);
    assert.equal(a.requests.length, 0);

    const verify = await admin(gw, 'POST', `/admin/routing/provider-route-verifications/m/${encodeURIComponent('m#0')}`, { base_url: a.url });
    assert.deepEqual([verify.status, verify.body.ok, verify.body.saved], [200, true, false]);

    await gw.close();
    gw = await start();
    assert.equal(gw.deps.registry.current.byName.get('m')!.routes[0]!.baseUrl, b.url, 're-applied after restart');

    const del = await admin<RouteView>(gw, 'DELETE', path);
    assert.deepEqual([del.status, del.body.source, del.body.base_url], [200, 'yaml', a.url]);
    assert.equal((await admin(gw, 'DELETE', path)).status, 404);
    assertInvalid(await admin(gw, 'PUT', path, { kind: 'nope' }), 'kind');
    assertInvalid(await admin(gw, 'PUT', path, { base_url: 'not a url' }), 'base_url');
    assertInvalid(await admin(gw, 'PUT', path, {}), 'body');
    assert.equal((await admin(gw, 'PUT', `/admin/routing/provider-routes/m/${encodeURIComponent('m#7')}`, { base_url: b.url })).status, 404);
    assert.equal((await admin(gw, 'PUT', `/admin/routing/provider-routes/nope/${encodeURIComponent('m#0')}`, { base_url: b.url })).status, 404);
  });

  it('a stored runtime route that cannot be applied is logged and skipped at startup', async () => {
    await t.db('provider_route_candidates').insert({ model_id: 'm', kind: 'no_such_kind', base_url: b.url, weight: 1, settings: '{}' });
    gw = await start();
    assert.ok(gw.logs.lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('saved setting not applied as stored: runtime route')));
    const listing = await admin<{ unapplied_runtime_routes: Array<{ model_id: string; kind: string; route_id: string }> }>(gw, 'GET', '/admin/routing');
    assert.deepEqual(listing.body.unapplied_runtime_routes.map((r) => [r.model_id, r.kind]), [['m', 'no_such_kind']]);
    const routeId = listing.body.unapplied_runtime_routes[0]!.route_id;
    assert.equal((await admin(gw, 'DELETE', `/admin/routing/provider-route-candidates/m/${encodeURIComponent(routeId)}`)).status, 200);
    assert.deepEqual((await admin<{ unapplied_runtime_routes: unknown[] }>(gw, 'GET', '/admin/routing')).body.unapplied_runtime_routes, []);
    assert.equal((await chat(gw, 'm')).status, 200);
  });

  const cases: EndpointCase[] = [
    { method: 'POST', path: '/admin/routing/provider-route-models', body: { id: 'x', route: { base_url: 'http://127.0.0.1:9/v1' } } },
    { method: 'POST', path: '/admin/routing/provider-route-model-verifications', body: { id: 'x', route: { base_url: 'http://127.0.0.1:9/v1' } } },
    { method: 'POST', path: '/admin/routing/provider-route-candidates/m', body: { base_url: 'http://127.0.0.1:9/v1' } },
    { method: 'POST', path: '/admin/routing/provider-route-candidate-verifications/m', body: { base_url: 'http://127.0.0.1:9/v1' } },
    { method: 'PATCH', path: '/admin/routing/provider-route-candidates/m/m%23c1', body: { weight: 1 } },
    { method: 'DELETE', path: '/admin/routing/provider-route-candidates/m/m%23c1' },
    { method: 'PUT', path: '/admin/routing/provider-routes/m/m%230', body: { weight: 1 } },
    { method: 'POST', path: '/admin/routing/provider-route-verifications/m/m%230', body: {} },
    { method: 'DELETE', path: '/admin/routing/provider-routes/m/m%230' },
  ];

  it('401 without or with a wrong admin token; 500 Database not configured without a database', async () => {
    gw = await start();
    await assertGuarded(gw, cases, yaml());
  });
});
