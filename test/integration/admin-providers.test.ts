/**
 * Providers and provider keys (docs/runtime-config.md) against real PostgreSQL and fake upstreams: custom
 * provider definitions (refused slugs, verification without saving, use by runtime routes),
 * provider keys joining the pool of routes with that label, environment keys disabled by
 * fingerprint, the rotation switch, and secrets never shown in responses or logs.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, type EndpointCase, assertGuarded } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { keyFingerprint } from '../../gateway/runtime-config/secrets';

const ENV_KEY = 'env-key-aaaaaaaaaaaa';
const ADDED_KEY = 'sk-added-key-bbbbbbbbbbbbbbbb';
const CUSTOM_KEY = 'sk-custom-provider-cccccccccccc';

interface Routable { provider: string; custom: boolean; disabled: boolean; routes: number; routable_routes: number; models: string[] }

describe('admin providers and provider keys', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${a.url}", api_key: ${ENV_KEY}, provider: route-a }`, `{ kind: engine_a, base_url: "${b.url}", provider: route-b }`])}`;
  const start = () => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN }, rng: () => 0 });
  const chat = (g: TestGateway, model = 'm') => fetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
    for (const table of ['provider_route_candidates', 'provider_definitions', 'provider_api_keys', 'disabled_provider_env_keys', 'provider_env_key_min_roles', 'disabled_providers', 'site_settings']) await t.db(table).delete();
  });
  afterEach(async () => {
    await closeAll(gw, a, b);
    gw = undefined;
  });

  function assertNoSecret(g: TestGateway, ...bodies: unknown[]): void {
    for (const secret of [ADDED_KEY, CUSTOM_KEY, ENV_KEY]) {
      for (const body of bodies) assert.equal(JSON.stringify(body).includes(secret), false, 'a key appears in a response');
      assert.equal(g.logs.lines.some((l) => JSON.stringify(l).includes(secret)), false, 'a key appears in a log line');
    }
  }

  it('creates a custom provider, uses it for a runtime route, and refuses slugs owned by code or the registry', async () => {
    gw = await start();
    const created = await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'my-cloud', display_name: 'My cloud', base_url: b.url, api_key: CUSTOM_KEY });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, { slug: 'my-cloud', display_name: 'My cloud', kind: 'generic_compat', base_url: b.url, key: { prefix: 'sk-c', fingerprint: keyFingerprint(CUSTOM_KEY) } });
    const model = await admin<{ routes: Array<{ provider: string; base_url: string }> }>(gw, 'POST', '/admin/routing/provider-route-models', { id: 'cloud-model', route: { provider: 'my-cloud' } });
    assert.equal(model.status, 201, JSON.stringify(model.body));
    assert.deepEqual([model.body.routes[0]!.provider, model.body.routes[0]!.base_url], ['my-cloud', b.url]);
    assert.equal((await chat(gw, 'cloud-model')).status, 200);
    assert.equal(b.requests.at(-1)!.headers.authorization, `Bearer ${CUSTOM_KEY}`);

    const patched = await admin(gw, 'PATCH', '/admin/provider-definitions/my-cloud', { display_name: 'Renamed' });
    assert.deepEqual([patched.status, patched.body.display_name, (patched.body.key as { fingerprint: string }).fingerprint], [200, 'Renamed', keyFingerprint(CUSTOM_KEY)]);
    assert.equal((await admin(gw, 'DELETE', '/admin/provider-definitions/my-cloud')).status, 409, 'in use by a runtime route');

    assertInvalid(await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'engine_a', base_url: b.url }), 'slug');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'route-a', base_url: b.url }), 'slug');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'Bad Slug', base_url: b.url }), 'slug');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'x', base_url: 'nope' }), 'base_url');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'x', base_url: b.url, kind: 'vendor_g_api' }), 'kind');
    assert.equal((await admin(gw, 'POST', '/admin/provider-definitions', { slug: 'my-cloud', base_url: b.url })).status, 409);
    assert.equal((await admin(gw, 'PATCH', '/admin/provider-definitions/nope', { display_name: 'x' })).status, 404);
    assert.equal((await admin(gw, 'DELETE', '/admin/provider-definitions/nope')).status, 404);
    assertNoSecret(gw, created.body, model.body, patched.body, (await admin(gw, 'GET', '/admin/provider-definitions')).body);
  });

  it('verifies a provider by probing its /models without saving', async () => {
    gw = await start();
    const ok = await admin(gw, 'POST', '/admin/provider-definitions/verify', { base_url: b.url, api_key: CUSTOM_KEY });
    assert.deepEqual([ok.status, ok.body.ok, ok.body.probe, ok.body.saved], [200, true, 'models', false]);
    assert.equal(b.requests.at(-1)!.method, 'GET');
    assert.equal(b.requests.at(-1)!.path, '/v1/models');
    assert.equal((await admin<{ providers: unknown[] }>(gw, 'GET', '/admin/provider-definitions')).body.providers.length, 0);
    b.setDefault({ kind: 'status', status: 401 });
    const bad = await admin(gw, 'POST', '/admin/provider-definitions/verify', { base_url: b.url });
    assert.deepEqual([bad.body.ok, bad.body.status], [false, 401]);
    assertNoSecret(gw, ok.body, bad.body);
  });

  it('an added key joins the pool of routes with that label; disable/enable/min-role/delete; survives restart', async () => {
    gw = await start();
    const added = await admin(gw, 'POST', '/admin/provider-keys', { provider: 'route-a', api_key: ADDED_KEY, label: 'second' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const id = added.body.id as string;
    assert.deepEqual(added.body, { id, provider: 'route-a', label: 'second', prefix: 'sk-a', fingerprint: keyFingerprint(ADDED_KEY), min_role: null, disabled: false });
    for (let i = 0; i < 4; i += 1) assert.equal((await chat(gw)).status, 200);
    const used = new Set(a.requests.map((r) => r.headers.authorization));
    assert.deepEqual(used, new Set([`Bearer ${ENV_KEY}`, `Bearer ${ADDED_KEY}`]), 'both keys rotate');

    assert.equal((await admin(gw, 'POST', `/admin/provider-keys/${id}/disable`)).body.disabled, true);
    assert.deepEqual(gw.deps.registry.current.byName.get('m')!.routes[0]!.apiKeys, [ENV_KEY]);
    assert.equal((await admin(gw, 'POST', `/admin/provider-keys/${id}/enable`)).body.disabled, false);
    assert.equal((await admin(gw, 'POST', `/admin/provider-keys/${id}/min-role`, { min_role: 'pro' })).body.min_role, 'pro');
    const keysFor = (role: 'free' | 'pro' | 'admin') => gw!.deps.registry.resolve('m', role, 'chat').routes[0]!.apiKeys;
    assert.deepEqual(keysFor('free'), [ENV_KEY], 'a key reserved for pro is not used for free callers');
    assert.deepEqual(keysFor('pro'), [ENV_KEY, ADDED_KEY]);
    assert.deepEqual(keysFor('admin'), [ENV_KEY, ADDED_KEY]);
    assertInvalid(await admin(gw, 'POST', `/admin/provider-keys/${id}/min-role`, { min_role: 'boss' }), 'min_role');

    await gw.close();
    gw = await start();
    assert.deepEqual(gw.deps.registry.current.byName.get('m')!.routes[0]!.apiKeys, [ENV_KEY, ADDED_KEY]);
    const listing = await admin<{ keys: Array<{ id: string; min_role: string }> }>(gw, 'GET', '/admin/provider-keys');
    assert.deepEqual(listing.body.keys.map((k) => [k.id, k.min_role]), [[id, 'pro']]);
    assert.equal((await admin(gw, 'DELETE', `/admin/provider-keys/${id}`)).status, 200);
    assert.deepEqual(gw.deps.registry.current.byName.get('m')!.routes[0]!.apiKeys, [ENV_KEY]);
    for (const path of [`/admin/provider-keys/${id}/disable`, `/admin/provider-keys/${id}/enable`, '/admin/provider-keys/abc/disable']) assert.equal((await admin(gw, 'POST', path)).status, 404);
    assert.equal((await admin(gw, 'DELETE', `/admin/provider-keys/${id}`)).status, 404);
    assertNoSecret(gw, added.body, listing.body);
  });

  it('refuses invalid keys (400), unknown providers (404) and duplicates (409); verifies a key without saving', async () => {
    gw = await start();
    assertInvalid(await admin(gw, 'POST', '/admin/provider-keys', { provider: 'route-a', api_key: 'short' }), 'api_key');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-keys', { api_key: ADDED_KEY }), 'provider');
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys', { provider: 'nope', api_key: ADDED_KEY })).status, 404);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys', { provider: 'route-a', api_key: ADDED_KEY })).status, 201);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys', { provider: 'route-a', api_key: ADDED_KEY })).status, 409);
    const verified = await admin(gw, 'POST', '/admin/provider-keys/verify', { provider: 'route-b', api_key: CUSTOM_KEY });
    assert.deepEqual([verified.status, verified.body.ok, verified.body.saved], [200, true, false]);
    assert.equal(b.requests.at(-1)!.headers.authorization, `Bearer ${CUSTOM_KEY}`);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/verify', { provider: 'nope', api_key: 'x' })).status, 404);
    assertNoSecret(gw, verified.body);
  });

  it('disables an environment key by fingerprint (route excluded when its pool empties), reserves it, re-enables it', async () => {
    gw = await start();
    const fingerprint = keyFingerprint(ENV_KEY);
    const disabled = await admin(gw, 'POST', '/admin/provider-keys/disable-env', { provider: 'route-a', fingerprint });
    assert.deepEqual(disabled.body, { provider: 'route-a', prefix: 'env-', fingerprint, disabled: true, min_role: null });
    const listed = await admin<{ routes: Array<{ effective_weight: number; exclusion_reasons: string[] }> }>(gw, 'GET', '/admin/routing/provider-routes/m');
    assert.deepEqual([listed.body.routes[0]!.effective_weight, listed.body.routes[0]!.exclusion_reasons], [0, ['every key of the provider is disabled']]);
    assert.equal((await chat(gw)).status, 200);
    assert.equal(a.requests.length, 0, 'route A is out of rotation');
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/min-role-env', { provider: 'route-a', fingerprint, min_role: 'internal' })).body.min_role, 'internal');
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/enable-env', { provider: 'route-a', fingerprint })).body.disabled, false);
    assert.deepEqual(gw.deps.registry.current.byName.get('m')!.routes[0]!.apiKeys, [ENV_KEY]);
    const routesFor = (role: 'pro' | 'internal') => gw!.deps.registry.resolve('m', role, 'chat').routes.map((r) => r.routeId);
    assert.deepEqual(routesFor('pro'), ['m#1'], 'a route whose only key is reserved above the caller is left out');
    assert.deepEqual(routesFor('internal'), ['m#0', 'm#1']);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/disable-env', { provider: 'route-a', fingerprint: '000000000000' })).status, 404);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/disable-env', { provider: 'nope', fingerprint })).status, 404);
    assertInvalid(await admin(gw, 'POST', '/admin/provider-keys/disable-env', { provider: 'route-a', fingerprint: 'xyz' }), 'fingerprint');
    assertInvalid(await admin(gw, 'POST', '/admin/provider-keys/min-role-env', { provider: 'route-a', fingerprint, min_role: 'root' }), 'min_role');
  });

  it('takes a provider out of rotation and back; lists the routing table', async () => {
    gw = await start();
    const off = await admin<Routable>(gw, 'PATCH', '/admin/providers/route-a/disabled', { disabled: true, reason: 'maintenance' });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.deepEqual([off.body.disabled, off.body.routes, off.body.routable_routes], [true, 1, 0]);
    for (let i = 0; i < 5; i += 1) assert.equal((await chat(gw)).status, 200);
    assert.equal(a.requests.length, 0);
    const table = await admin<{ providers: Routable[] }>(gw, 'GET', '/admin/providers/routable');
    assert.deepEqual(table.body.providers.map((p) => [p.provider, p.disabled, p.routable_routes, p.models]), [['route-a', true, 0, []], ['route-b', false, 1, ['m']]]);
    await gw.close();
    gw = await start();
    assert.equal(gw.deps.registry.current.byName.get('m')!.routes[0]!.weight, 0, 're-applied after restart');
    const on = await admin<Routable>(gw, 'PATCH', '/admin/providers/route-a/disabled', { disabled: false });
    assert.deepEqual([on.body.disabled, on.body.routable_routes], [false, 1]);
    assertInvalid(await admin(gw, 'PATCH', '/admin/providers/route-a/disabled', { disabled: 'no' }), 'disabled');
    assert.equal((await admin(gw, 'PATCH', '/admin/providers/nope/disabled', { disabled: true })).status, 404);
  });

  it('a stored custom provider whose slug the registry owns is skipped at boot with a log line', async () => {
    await t.db('provider_definitions').insert({ slug: 'route-a', display_name: 'clash', base_url: b.url });
    gw = await start();
    assert.ok(gw.logs.lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith("saved setting not applied as stored: provider definition 'route-a' skipped")));
    assert.equal((await chat(gw)).status, 200);
  });

  const cases: EndpointCase[] = [
    { method: 'GET', path: '/admin/provider-definitions' },
    { method: 'POST', path: '/admin/provider-definitions', body: { slug: 'x', base_url: 'http://127.0.0.1:9' } },
    { method: 'POST', path: '/admin/provider-definitions/verify', body: { base_url: 'http://127.0.0.1:9' } },
    { method: 'PATCH', path: '/admin/provider-definitions/x', body: {} },
    { method: 'DELETE', path: '/admin/provider-definitions/x' },
    { method: 'GET', path: '/admin/provider-keys' },
    { method: 'POST', path: '/admin/provider-keys', body: { provider: 'route-a', api_key: ADDED_KEY } },
    { method: 'POST', path: '/admin/provider-keys/verify', body: { provider: 'route-a', api_key: ADDED_KEY } },
    { method: 'POST', path: '/admin/provider-keys/1/disable' },
    { method: 'POST', path: '/admin/provider-keys/1/enable' },
    { method: 'DELETE', path: '/admin/provider-keys/1' },
    { method: 'POST', path: '/admin/provider-keys/1/min-role', body: { min_role: 'pro' } },
    { method: 'POST', path: '/admin/provider-keys/disable-env', body: { provider: 'route-a', fingerprint: '000000000000' } },
    { method: 'POST', path: '/admin/provider-keys/enable-env', body: { provider: 'route-a', fingerprint: '000000000000' } },
    { method: 'POST', path: '/admin/provider-keys/min-role-env', body: { provider: 'route-a', fingerprint: '000000000000', min_role: 'pro' } },
    { method: 'PATCH', path: '/admin/providers/route-a/disabled', body: { disabled: true } },
    { method: 'GET', path: '/admin/providers/routable' },
  ];

  it('401 without or with a wrong admin token; 500 Database not configured without a database', async () => {
    gw = await start();
    await assertGuarded(gw, cases, yaml());
  });
});
