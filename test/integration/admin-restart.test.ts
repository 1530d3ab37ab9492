/**
 * Runtime overrides survive a restart: weights, visibility and a runtime model changed through the
 * admin API are re-applied by a new gateway started on the same database (docs/runtime-config.md).
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { freshDatabase, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';

describe('runtime overrides across a restart', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;

  const yaml = () => `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${a.url}", provider: route-a }`, `{ kind: engine_a, base_url: "${b.url}", provider: route-b }`])}`;
  const start = () => startTestGateway({ modelsYaml: yaml(), db: t.db, env: { ADMIN_TOKEN } });

  before(async () => {
    t = await freshDatabase();
    [a, b] = await startUpstreamPair();
  });
  after(async () => {
    await closeAll(gw, a, b);
    await t.drop();
  });

  it('re-applies weight, visibility and runtime model after stop and start on the same database', async () => {
    gw = await start();
    const endpointB = gw.deps.registry.current.byName.get('m')!.routes[1]!.endpointId;
    assert.equal((await admin(gw, 'PUT', `/admin/routing/weights/m/${endpointB}`, { weight: 0 })).status, 200);
    assert.equal((await admin(gw, 'PATCH', '/admin/models/m/visibility', { required_role: 'internal' })).status, 200);
    assert.equal((await admin(gw, 'POST', '/admin/routing/provider-route-models', { id: 'rt', route: { base_url: b.url } })).status, 201);
    await gw.close();

    gw = await start();
    const weight = await admin(gw, 'GET', `/admin/routing/weights/m/${endpointB}`);
    assert.deepEqual([weight.body.yaml_weight, weight.body.override, weight.body.effective], [1, 0, 0]);
    const visibility = await admin<{ models: Array<{ model_id: string; baseline: string | null; override: string | null; effective: string | null }> }>(gw, 'GET', '/admin/models/visibility');
    assert.deepEqual(visibility.body.models, [
      { model_id: 'm', baseline: null, override: 'internal', effective: 'internal' },
      { model_id: 'rt', baseline: 'admin', override: null, effective: 'admin' },
    ]);
    assert.throws(() => gw!.deps.registry.resolve('m', 'pro', 'chat'), (err: { status?: number }) => err.status === 404);
    const listing = await admin<{ models: Array<{ id: string; source: string; routes: Array<{ source: string; effective_weight: number }> }> }>(gw, 'GET', '/admin/routing');
    assert.deepEqual(listing.body.models.map((m) => [m.id, m.source, m.routes.map((r) => [r.source, r.effective_weight])]), [
      ['m', 'yaml', [['yaml', 1], ['yaml', 0]]],
      ['rt', 'runtime', [['runtime', 1]]],
    ]);
    const before = b.requests.length;
    for (const model of ['m', 'm', 'm', 'rt']) {
      const response = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
      assert.equal(response.status, 200);
      await response.text();
    }
    assert.equal(b.requests.length - before, 1, 'only the runtime model reached upstream B; route B of m stays at weight 0');
  });
});
