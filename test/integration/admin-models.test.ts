/**
 * Model visibility overrides and concurrency exemptions (docs/runtime-config.md) against real PostgreSQL:
 * baseline/override/effective listing, the effective required_role deciding resolution
 * (404 for a role that may not see the model) and `/v1/models`, and re-application after restart.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, type EndpointCase, assertGuarded } from '../support/admin';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

interface Visibility { model_id: string; baseline: string | null; override: string | null; effective: string | null }

describe('admin model visibility and concurrency exemptions', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let up: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('open', [`{ kind: generic_compat, base_url: "${up.url}" }`])}${chatModelYaml('pro-only', [`{ kind: generic_compat, base_url: "${up.url}" }`], '    required_role: pro\n')}`;
  const start = (env: Record<string, string> = {}) => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN, ...env } });

  freshDatabaseForBlock((db) => {
    t = db;
  });
  beforeEach(async () => {
    up = await startFakeUpstream();
    await t.db('model_visibility_overrides').delete();
    await t.db('model_concurrency_exemptions').delete();
  });
  afterEach(async () => {
    await closeAll(gw, up);
    gw = undefined;
  });

  async function visibility(g: TestGateway): Promise<Visibility[]> {
    const response = await admin<{ models: Visibility[] }>(g, 'GET', '/admin/models/visibility');
    assert.equal(response.status, 200);
    return response.body.models;
  }

  it('lists baseline, override and effective; an override hides a model from a free caller (404) and survives restart', async () => {
    gw = await start();
    assert.deepEqual(await visibility(gw), [
      { model_id: 'open', baseline: null, override: null, effective: null },
      { model_id: 'pro-only', baseline: 'pro', override: null, effective: 'pro' },
    ]);
    gw.deps.registry.resolve('open', 'free', 'chat');

    const patched = await admin(gw, 'PATCH', '/admin/models/open/visibility', { required_role: 'internal' });
    assert.deepEqual(patched.body, { model_id: 'open', baseline: null, override: 'internal', effective: 'internal' });
    assert.throws(() => gw!.deps.registry.resolve('open', 'free', 'chat'), (err: { status?: number }) => err.status === 404);
    assert.throws(() => gw!.deps.registry.resolve('open', 'pro', 'chat'), (err: { status?: number }) => err.status === 404);
    assert.equal(gw.deps.registry.resolve('open', 'internal', 'chat').id, 'open');

    const lowered = await admin(gw, 'PATCH', '/admin/models/pro-only/visibility', { required_role: 'free' });
    assert.equal(lowered.body.effective, 'free');
    assert.equal(gw.deps.registry.resolve('pro-only', 'free', 'chat').id, 'pro-only');

    await gw.close();
    gw = await start();
    assert.deepEqual((await visibility(gw)).map((v) => [v.model_id, v.override, v.effective]), [['open', 'internal', 'internal'], ['pro-only', 'free', 'free']]);
    assert.throws(() => gw!.deps.registry.resolve('open', 'free', 'chat'), (err: { status?: number }) => err.status === 404);

    const cleared = await admin(gw, 'PATCH', '/admin/models/open/visibility', { required_role: null });
    assert.deepEqual(cleared.body, { model_id: 'open', baseline: null, override: null, effective: null });
  });

  it('the effective role decides /v1/models for a caller without a valid key', async () => {
    gw = await start({ USER_AUTH_ENABLED: 'true' });
    const ids = async () => ((await (await fetch(`${gw!.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    assert.deepEqual(await ids(), ['open']);
    assert.equal((await admin(gw, 'PATCH', '/admin/models/open/visibility', { required_role: 'pro' })).status, 200);
    assert.deepEqual(await ids(), []);
    assert.equal((await admin(gw, 'PATCH', '/admin/models/open/visibility', { required_role: null })).status, 200);
    assert.deepEqual(await ids(), ['open']);
  });

  it('refuses an invalid role (400 naming required_role) and an unknown model (404)', async () => {
    gw = await start();
    assertInvalid(await admin(gw, 'PATCH', '/admin/models/open/visibility', { required_role: 'god' }), 'required_role');
    assertInvalid(await admin(gw, 'PATCH', '/admin/models/open/visibility', {}), 'required_role');
    assert.equal((await admin(gw, 'PATCH', '/admin/models/nope/visibility', { required_role: 'pro' })).status, 404);
  });

  it('stores a concurrency exemption, exposes it in memory, and re-applies it after restart', async () => {
    gw = await start();
    assert.equal(gw.deps.runtimeConfig.isConcurrencyExempt('open'), false);
    const on = await admin(gw, 'PATCH', '/admin/models/open/concurrency', { exempt: true });
    assert.deepEqual(on.body, { model_id: 'open', concurrency_exempt: true });
    assert.equal(gw.deps.runtimeConfig.isConcurrencyExempt('open'), true);
    await gw.close();
    gw = await start();
    assert.equal(gw.deps.runtimeConfig.isConcurrencyExempt('open'), true);
    const off = await admin(gw, 'PATCH', '/admin/models/open/concurrency', { exempt: false });
    assert.deepEqual(off.body, { model_id: 'open', concurrency_exempt: false });
    assert.equal(gw.deps.runtimeConfig.isConcurrencyExempt('open'), false);
    assertInvalid(await admin(gw, 'PATCH', '/admin/models/open/concurrency', { exempt: 'yes' }), 'exempt');
    assert.equal((await admin(gw, 'PATCH', '/admin/models/nope/concurrency', { exempt: true })).status, 404);
  });

  const cases: EndpointCase[] = [
    { method: 'GET', path: '/admin/models/visibility' },
    { method: 'PATCH', path: '/admin/models/open/visibility', body: { required_role: 'pro' } },
    { method: 'PATCH', path: '/admin/models/open/concurrency', body: { exempt: true } },
  ];

  it('401 without or with a wrong admin token; 500 Database not configured without a database', async () => {
    gw = await start();
    await assertGuarded(gw, cases, yaml());
  });
});
