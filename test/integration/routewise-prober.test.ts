/**
 * The routewise latency prober through two real gateway assemblies on one PostgreSQL database and
 * fake upstreams counting `GET /v1/models` probes: the model's probe lease lets one process probe
 * at a time (rounds of the two processes never overlap, and every probe belongs to a round), an
 * `on_demand` route is never probed, and the route answering its probe slower than
 * `max_latency_ms` is tried after the other route of its tier.
 */
import assert from 'node:assert/strict';
import { freshDatabase, type TestDatabase } from '../support/db';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

describe('routewise latency prober (two gateways, one database)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let a: FakeUpstream;
  let b: FakeUpstream;
  const gateways: TestGateway[] = [];

  before(async () => {
    t = await freshDatabase();
    [a, b] = await startUpstreamPair();
  });
  after(async () => {
    await closeAll(...gateways, a, b);
    await t.drop();
  });

  // Route A: cheaper (first by cost), but its probe answers after 1.5 s, above max_latency_ms 500.
  // Route B: dearer, answers its probe at once. Route C: on_demand (lazily started), dearest, never probed.
  const yaml = () => `models:\n${chatModelYaml('p', [
    `{ kind: generic_compat, base_url: "${a.url}", provider: slow-a, provider_type: on_demand, pricing: { prompt: "1", completion: "1" } }`,
    `{ kind: generic_compat, base_url: "${b.url}", provider: fast-b, provider_type: on_demand, pricing: { prompt: "2", completion: "2" } }`,
    `{ kind: generic_compat, base_url: "${b.origin}/lazy/v1", provider: lazy-c, on_demand: true, pricing: { prompt: "9", completion: "9" } }`,
  ], '    router: routewise\n    router_params: { probe_interval_seconds: 0.05, max_latency_ms: 500 }\n')}`;

  const probes = (u: FakeUpstream, path = '/v1/models') => u.requests.filter((r) => r.method === 'GET' && r.path === path).length;

  it('probes under the lease one process at a time, never on_demand routes, and demotes the slow route', async () => {
    a.setPathBehaviour('/v1/models', { kind: 'slow_first_byte', delayMs: 1_500, then: { kind: 'json' } });
    for (let i = 0; i < 2; i += 1) gateways.push(await startTestGateway({ modelsYaml: yaml(), db: t.db, rng: () => 0 }));
    const [gw1, gw2] = gateways as [TestGateway, TestGateway];
    const roundsOf = (gw: TestGateway) => gw.deps.routewise.prober.rounds.filter((r) => r.modelId === 'p');

    await waitFor(() => roundsOf(gw1).length + roundsOf(gw2).length >= 3, 'three finished probe rounds across the two processes', 30_000);
    // Both processes try every 50 ms while a round lasts 1.5 s: without the lease their rounds would overlap.
    const rounds = [...roundsOf(gw1), ...roundsOf(gw2)].sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < rounds.length; i += 1) {
      assert.ok(rounds[i]!.startedAt >= rounds[i - 1]!.endedAt, `round ${i} started before round ${i - 1} ended: ${JSON.stringify(rounds)}`);
    }
    // Every probe of A belongs to a round (at most one more is in flight in the current round).
    assert.ok(probes(a) >= rounds.length && probes(a) <= rounds.length + 1, `${probes(a)} probes of A for ${rounds.length} rounds`);
    assert.equal(b.requests.filter((r) => r.path.startsWith('/lazy')).length, 0, 'the on_demand route was never probed');
    assert.equal(b.requests.filter((r) => r.path !== '/v1/models').length, 0, 'probes are GET /models only');
    assert.ok(probes(b) >= rounds.length, 'B is probed in every round');

    // A process that ran a round has A's slow result: A (cheapest) is now tried after B.
    const prober = roundsOf(gw1).length > 0 ? gw1 : gw2;
    const model = prober.deps.registry.current.models.find((m) => m.id === 'p')!;
    const slow = model.routes.find((r) => r.providerLabel === 'slow-a')!;
    assert.ok(prober.deps.routewise.prober.resultOf(slow)!.latencyMs > 500);
    assert.deepEqual(prober.deps.routewise.order(model, () => 0).map((r) => r.providerLabel), ['fast-b', 'lazy-c', 'slow-a']);
    const res = await fetch(`${prober.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'p', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(b.requests.filter((r) => r.path === '/v1/chat/completions').length, 1, 'served by B');
    assert.equal(a.requests.filter((r) => r.path === '/v1/chat/completions').length, 0, 'the slow route was not tried first');

    // Shutdown aborts rounds in flight and releases their leases.
    for (const gw of gateways.splice(0)) await gw.close();
    assert.equal((await t.db('routewise_probe_leases').where({ model_id: 'p' })).length, 0, 'no lease left behind');
  });
});
