/**
 * The routewise latency prober alone: interval and threshold parsing, which routes are probed
 * (never `on_demand`), the probe URL, demotion within a tier (never removal), and a prober without
 * a database probing a fake upstream's `/models` and demoting the route that failed.
 */
import assert from 'node:assert/strict';
import type { Registry } from '../../gateway/registry/types';
import { routewiseOrder } from '../../gateway/routing/routewise';
import { RoutewisePools } from '../../gateway/routing/routewise-pools';
import { isDemoted, maxLatencyMs, probedRoutes, probeIntervalMs, probeUrl, RoutewiseProber } from '../../gateway/routing/routewise-prober';
import { seededRng } from '../../gateway/routing/weighted-order';
import { captureLogs } from '../support/logs';
import { closeAll, startUpstreamPair, type FakeUpstream } from '../support/fake-upstream';
import { waitFor } from '../support/wait';
import { labels, routewiseModel } from '../support/routewise';


const model = routewiseModel;

describe('routewise prober: parsing and selection', () => {
  it('reads probe_interval_seconds and max_latency_ms only as positive numbers', () => {
    assert.equal(probeIntervalMs({ probe_interval_seconds: 30 }), 30_000);
    assert.equal(probeIntervalMs({ probe_interval_seconds: 0.5 }), 500);
    assert.equal(probeIntervalMs({ probe_interval_seconds: '10' }), 10_000);
    for (const bad of [0, -5, 'soon', '', null, Number.NaN, Infinity, undefined]) {
      assert.equal(probeIntervalMs({ probe_interval_seconds: bad }), undefined, `interval ${String(bad)}`);
    }
    assert.equal(probeIntervalMs({}), undefined);
    assert.equal(maxLatencyMs({ max_latency_ms: 800 }), 800);
    assert.equal(maxLatencyMs({ max_latency_ms: 0 }), undefined);
    assert.equal(maxLatencyMs({}), undefined);
  });

  it('never probes on_demand routes (own or inherited from the model) nor weight-0 routes', () => {
    const m = model([{}, { on_demand: true }, { weight: 0 }, {}]);
    assert.deepEqual(labels(probedRoutes(m)), ['r0', 'r3']);
    assert.deepEqual(labels(probedRoutes(model([{}, {}], { on_demand: true }))), [], 'the model is on_demand: no route is probed');
  });

  it('probes GET <base>/models beside the chat path', () => {
    assert.equal(probeUrl({ kind: 'generic_compat', baseUrl: 'http://h/v1' }), 'http://h/v1/models');
    assert.equal(probeUrl({ kind: 'generic_compat', baseUrl: 'http://h/v1/' }), 'http://h/v1/models');
    assert.equal(probeUrl({ kind: 'engine_a', baseUrl: 'http://h:8000' }), 'http://h:8000/models');
  });

  it('probes a message-format route beside its messages path, the cloud variant at its model', () => {
    assert.equal(probeUrl({ kind: 'vendor_h_direct', baseUrl: 'http://h' }), 'http://h/v1/models');
    assert.equal(probeUrl({ kind: 'vendor_g_api', baseUrl: 'http://h/api/v1/' }), 'http://h/api/v1/models');
    assert.equal(probeUrl({ kind: 'vendor_h_cloud', baseUrl: 'http://h/projects/p/locations/l/publishers/x', providerModelId: 'family-4.6@2026' }),
      'http://h/projects/p/locations/l/publishers/x/models/family-4.6@2026');
  });

  it('demotes on a recent failure or a latency above max_latency_ms; stale results and no threshold keep the route', () => {
    const base = { now: 10_000, intervalMs: 1_000, maxLatencyMs: 200 };
    assert.equal(isDemoted(undefined, base), false);
    assert.equal(isDemoted({ ok: true, latencyMs: 150, at: 9_500 }, base), false);
    assert.equal(isDemoted({ ok: true, latencyMs: 250, at: 9_500 }, base), true);
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: 9_500 }, base), true);
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: 9_500 }, { ...base, maxLatencyMs: undefined }), true, 'a failure demotes without a threshold');
    assert.equal(isDemoted({ ok: true, latencyMs: 250, at: 9_500 }, { ...base, maxLatencyMs: undefined }), false);
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: 6_000 }, base), true, 'an interval below the probe timeout counts as the timeout (5 s): 4 s old is recent');
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: -6_000 }, base), false, 'older than three periods of max(interval, timeout)');
    const long = { now: 100_000, intervalMs: 20_000, maxLatencyMs: 200 };
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: 45_000 }, long), true, 'within three 20 s intervals');
    assert.equal(isDemoted({ ok: false, latencyMs: 5, at: 39_000 }, long), false, 'older than three 20 s intervals');
  });
});

describe('routewise ordering with demoted routes', () => {
  const m = model([
    { provider_type: 'concurrency', concurrency: { limit: 1 }, concurrency_pool: 'gpu1' },
    { provider_type: 'concurrency', concurrency: { limit: 1 }, concurrency_pool: 'gpu2' },
    { provider_type: 'on_demand', pricing: { prompt: '1', completion: '1' } },
    { provider_type: 'on_demand', pricing: { prompt: '5', completion: '5' } },
  ]);
  const order = (demoted: string[]) => labels(routewiseOrder(m, {
    pools: new RoutewisePools(), settings: {}, at: 0, rng: seededRng(1), demoted: (r) => demoted.includes(r.providerLabel),
  }));

  it('moves a demoted route after the others of its tier, never out of the order nor into another tier', () => {
    const [first, second] = order([]).slice(0, 2);
    assert.deepEqual(order([first!]).slice(0, 2), [second, first], 'the concurrency tier: the demoted one second');
    assert.deepEqual(order([]).slice(2), ['r2', 'r3'], 'on-demand: cheapest first');
    assert.deepEqual(order(['r2']).slice(2), ['r3', 'r2'], 'on-demand: the cheap slow route after the dearer one');
    assert.deepEqual(order(['r0', 'r1', 'r2', 'r3']).sort(), ['r0', 'r1', 'r2', 'r3'], 'all demoted: all still there');
    assert.deepEqual(order(['r0', 'r1']).slice(0, 2).sort(), ['r0', 'r1'], 'demoted concurrency routes stay ahead of on-demand');
  });
});

describe('routewise prober without a database', function () {
  this.timeout(15_000);
  let a: FakeUpstream;
  let b: FakeUpstream;
  let prober: RoutewiseProber | undefined;

  beforeEach(async () => {
    [a, b] = await startUpstreamPair();
  });
  afterEach(async () => {
    await prober?.stop();
    prober = undefined;
    await closeAll(a, b);
  });

  it('probes each non-on_demand route without a lease and demotes the one whose probe failed', async () => {
    const m = model([{ base_url: a.url }, { base_url: b.url }, { base_url: `${b.origin}/other/v1`, on_demand: true, provider: 'od' }], {
      router_params: { probe_interval_seconds: 0.05, max_latency_ms: 5_000 },
    });
    a.setPathBehaviour('/v1/models', { kind: 'status', status: 503 });
    const registry = { models: [m] } as unknown as Registry;
    prober = new RoutewiseProber(Date.now, 2_000);
    prober.start({ db: null, registry: () => registry, applies: () => true, params: (x) => x.routerParams, log: captureLogs('prober', 'debug').log });
    await waitFor(() => prober!.rounds.length >= 3, 'three probe rounds');
    const probesOf = (u: FakeUpstream) => u.requests.filter((r) => r.method === 'GET' && r.path === '/v1/models').length;
    assert.ok(probesOf(a) >= 3);
    // Route 2 lives on b's server too (under /other) but is on_demand: never probed.
    assert.equal(b.requests.filter((r) => r.path.startsWith('/other')).length, 0, 'the on_demand route was never probed');
    const rounds = prober.rounds.length;
    assert.ok(probesOf(b) >= rounds - 1 && probesOf(b) <= rounds + 1, `one probe of b per round (${probesOf(b)} probes, ${rounds} rounds)`);
    assert.equal(b.requests.filter((r) => r.path !== '/v1/models').length, 0, 'no chat request is sent by the prober');
    assert.equal(prober.demoted(m.routerParams, m.routes[0]!), true, 'route a answered 503');
    assert.equal(prober.demoted(m.routerParams, m.routes[1]!), false);
    assert.equal(prober.resultOf(m.routes[2]!), undefined, 'the on_demand route has no probe result');
    assert.ok(prober.resultOf(m.routes[1]!)?.ok);
  });
});
