/**
 * `GET /health/deep` (docs/routing.md) against real PostgreSQL: per-endpoint circuit state and
 * availability, `degraded` after an upstream credential rejection, `route_exclusions` from the
 * runtime configuration (admin weight override 0, provider disabled) merged into the providers
 * map, and a verdict that exclusions do not degrade; synthetic probes (docs/identity.md) record nothing
 * while a key's real traffic moves breaker and affinity (key `key:<id>`).
 */
import assert from 'node:assert/strict';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import type { DeepHealthBody } from '../../gateway/surfaces/health-deep';

describe('GET /health/deep', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let c: FakeUpstream;
  let gw: TestGateway | undefined;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  afterEach(async () => {
    await closeAll(gw, a, b, c);
    gw = undefined;
  });

  async function deep(): Promise<DeepHealthBody> {
    const res = await fetch(`${gw!.url}/health/deep`);
    assert.equal(res.status, 200);
    return await res.json() as DeepHealthBody;
  }

  async function chat(model: string): Promise<number> {
    const res = await fetch(`${gw!.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
    await res.text();
    return res.status;
  }

  it('reports circuits, credential rejections and exclusions; exclusions do not degrade the verdict', async () => {
    [a, b, c] = [await startFakeUpstream(), await startFakeUpstream(), await startFakeUpstream()];
    const yaml = `models:\n${chatModelYaml('m', [
      `{ kind: generic_compat, base_url: "${a.url}", provider: route-a }`,
      `{ kind: generic_compat, base_url: "${b.url}", provider: route-b }`,
    ])}${chatModelYaml('n', [`{ kind: generic_compat, base_url: "${c.url}", provider: route-c }`])}`;
    gw = await startTestGateway({ modelsYaml: yaml, db: t.db, env: { ADMIN_TOKEN, CIRCUIT_FAILURE_THRESHOLD: '1' }, rng: () => 0 });

    const fresh = await deep();
    assert.equal(fresh.status, 'healthy');
    assert.deepEqual(fresh.endpoints.map((e) => [e.provider, e.models, e.circuit, e.availability, e.status]), [
      ['route-a', ['m'], 'closed', 1, 'healthy'], ['route-b', ['m'], 'closed', 1, 'healthy'], ['route-c', ['n'], 'closed', 1, 'healthy'],
    ]);
    assert.deepEqual(fresh.route_exclusions, []);
    assert.deepEqual(Object.keys(fresh.providers).sort(), ['route-a', 'route-b', 'route-c']);

    // An admin weight override of 0 excludes route-b from m: listed, merged, verdict still healthy.
    const endpointB = fresh.endpoints.find((e) => e.provider === 'route-b')!.endpoint_id;
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${encodeURIComponent(endpointB)}`, { weight: 0 })).status, 200);
    const excluded = await deep();
    assert.equal(excluded.status, 'healthy');
    assert.deepEqual(excluded.route_exclusions, [
      { model: 'm', endpoint_id: endpointB, provider: 'route-b', configured_weight: 1, effective_weight: 0, reasons: ['admin weight override of 0'] },
    ]);
    assert.deepEqual(excluded.providers['route-b'], { status: 'healthy', endpoints: [], excluded_from_models: ['m'], exclusion_reasons: { m: ['admin weight override of 0'] } });
    assert.equal(excluded.endpoints.some((e) => e.provider === 'route-b'), false, 'an excluded endpoint takes no traffic');

    // route-a fails once (threshold 1): its circuit opens and the verdict degrades.
    a.enqueue({ kind: 'status', status: 500 });
    assert.equal(await chat('m'), 502);
    const open = await deep();
    assert.equal(open.status, 'degraded');
    const entryA = open.endpoints.find((e) => e.provider === 'route-a')!;
    assert.equal(entryA.circuit, 'open');
    assert.equal(entryA.status, 'degraded');
    assert.ok(entryA.availability < 1);
    assert.equal(open.providers['route-a']!.status, 'degraded');

    // route-c's provider rejects the gateway's credential: degraded at the first rejection, circuit still closed.
    c.enqueue({ kind: 'status', status: 401, message: 'invalid api key' });
    assert.equal(await chat('n'), 401);
    const rejected = (await deep()).endpoints.find((e) => e.provider === 'route-c')!;
    assert.deepEqual([rejected.circuit, rejected.degraded, rejected.status], ['closed', true, 'degraded']);

    // Disabling route-c's provider excludes it from n with that reason, merged into the providers map.
    assert.equal((await admin(gw, 'PATCH', '/admin/providers/route-c/disabled', { disabled: true, reason: 'maintenance' })).status, 200);
    const disabled = await deep();
    assert.deepEqual(disabled.route_exclusions.map((e) => [e.model, e.provider, e.configured_weight, e.effective_weight, e.reasons]), [
      ['m', 'route-b', 1, 0, ['admin weight override of 0']], ['n', 'route-c', 1, 0, ['provider disabled']],
    ]);
    assert.deepEqual(disabled.providers['route-c']!.excluded_from_models, ['n']);
    assert.deepEqual(disabled.providers['route-c']!.exclusion_reasons, { n: ['provider disabled'] });
  });

  it('honoured synthetic probes record no routing observation; a key\'s real traffic does (breaker, affinity key:<id>)', async () => {
    [a, b] = [await startFakeUpstream(), await startFakeUpstream()];
    const yaml = `models:\n${chatModelYaml('m', [
      `{ kind: generic_compat, base_url: "${a.url}", provider: route-a }`,
      `{ kind: generic_compat, base_url: "${b.url}", provider: route-b }`,
    ])}`;
    gw = await startTestGateway({
      modelsYaml: yaml, db: t.db, rng: () => 0,
      env: { ADMIN_TOKEN, USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', AUTH_KEY_REFRESH_SECONDS: '0.2', CIRCUIT_FAILURE_THRESHOLD: '1' },
    });
    const key = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'prober@example.com'));
    await t.db('users').where({ email: 'prober@example.com' }).update({ role: 'internal', updated_at: t.db.fn.now() });
    const send = (headers: Record<string, string> = {}) => fetch(`${gw!.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await eventually(async () => (await send({ 'x-probe': 'synthetic' })).headers.has('x-provider'), 'the key cache to see the role');
    const [row] = await t.db('api_keys').select<Array<{ id: number }>>('id');
    const pinKey = `key:${row!.id}\nm`;
    const endpoint = (label: string) => gw!.deps.registry.current.models[0]!.routes.find((r) => r.providerLabel === label)!.endpointId;
    assert.equal((await send()).status, 200);
    assert.equal(gw.deps.routing.affinity.lookup(pinKey), endpoint('route-a'), 'real traffic pins the key to A');
    a.setDefault({ kind: 'status', status: 500 });
    const probe = await send({ 'x-probe': 'synthetic' });
    assert.equal(probe.status, 200);
    assert.equal(probe.headers.get('x-provider'), 'route-b', 'A failed, B answered');
    const afterProbe = (await deep()).endpoints.find((e) => e.provider === 'route-a')!;
    assert.deepEqual([afterProbe.circuit, afterProbe.availability, afterProbe.consecutive_failures], ['closed', 1, 0], 'threshold 1, yet nothing recorded');
    assert.equal(gw.deps.routing.affinity.lookup(pinKey), endpoint('route-a'), 'the probe did not move the pin');
    // The same failure on real traffic opens A's circuit and drops the pin; the next request pins B.
    assert.equal((await send()).status, 200);
    assert.equal((await deep()).endpoints.find((e) => e.provider === 'route-a')!.circuit, 'open');
    assert.equal(gw.deps.routing.affinity.lookup(pinKey), undefined);
    assert.equal((await send()).status, 200);
    assert.equal(gw.deps.routing.affinity.lookup(pinKey), endpoint('route-b'));
  });
});
