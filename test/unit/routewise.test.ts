/**
 * The routewise ordering (pure, seeded rng, fake clock) and its pools: concurrency slots first
 * while free, then quota while budget is left, then on-demand cheapest first at the pricing in
 * force; exact `quota_source` matching; weights breaking ties; the ENABLE_ROUTEWISE rule.
 */
import assert from 'node:assert/strict';
import type { Model } from '../../gateway/registry/types';
import { effectiveDefaultRouter, quotaSource, routewiseOrder, type RoutewiseSettings } from '../../gateway/routing/routewise';
import { RoutewisePools } from '../../gateway/routing/routewise-pools';
import { Routewise } from '../../gateway/routing/routewise-runtime';
import { seededRng, weightedOrder } from '../../gateway/routing/weighted-order';
import { labels, routewiseModel } from '../support/routewise';

const NOON = Date.parse('2026-12-02T12:00:00Z');

const model = routewiseModel;

function order(m: Model, pools: RoutewisePools, settings: RoutewiseSettings = {}, at = NOON, seed = 1): string[] {
  return labels(routewiseOrder(m, { pools, settings, at, rng: seededRng(seed) }));
}

describe('routewise ordering', () => {
  const m = model([
    { provider_type: 'on_demand', pricing: { prompt: '3', completion: '15' } },
    { provider_type: 'quota', quota: { limit: 2 }, quota_pool: 'team' },
    { provider_type: 'concurrency', concurrency: { limit: 1 }, concurrency_pool: 'gpu' },
    { provider_type: 'on_demand', pricing: { prompt: '1', completion: '2' } },
  ]);

  it('uses a free concurrency slot first, then quota, then on-demand cheapest first', () => {
    const pools = new RoutewisePools(() => NOON);
    assert.deepEqual(order(m, pools), ['r2', 'r1', 'r3', 'r0']);
  });

  it('spills to quota when the concurrency pool is full, keeping the full route as last resort', () => {
    const pools = new RoutewisePools(() => NOON);
    const release = pools.acquire(m.routes[2]!);
    assert.deepEqual(order(m, pools), ['r1', 'r3', 'r0', 'r2']);
    release();
    release();
    assert.equal(pools.inFlight('gpu'), 0, 'release is idempotent');
    assert.deepEqual(order(m, pools), ['r2', 'r1', 'r3', 'r0']);
  });

  it('spills to on-demand when the quota is spent (requests counted from finished requests)', () => {
    const pools = new RoutewisePools(() => NOON);
    const full = pools.acquire(m.routes[2]!);
    pools.record(m.routes[1]!, { prompt_tokens: 10 });
    assert.deepEqual(order(m, pools), ['r1', 'r3', 'r0', 'r2']);
    pools.record(m.routes[1]!, { prompt_tokens: 10 });
    assert.deepEqual(order(m, pools), ['r3', 'r0', 'r2', 'r1']);
    full();
  });

  it('forgets quota use at 00:00 UTC', () => {
    let now = NOON;
    const pools = new RoutewisePools(() => now);
    pools.record(m.routes[1]!, undefined);
    pools.record(m.routes[1]!, undefined);
    assert.equal(pools.quotaUsed(quotaSource(m.routes[1]!)), 2);
    now = Date.parse('2026-12-03T00:00:00Z');
    assert.equal(pools.quotaUsed(quotaSource(m.routes[1]!)), 0);
  });

  it('orders on-demand routes by the pricing in force now (pricing_schedule)', () => {
    const scheduled = model([
      { pricing: { prompt: '1', completion: '1' } },
      { pricing: { prompt: '2', completion: '2' }, pricing_schedule: { effective_at: '2026-12-01T00:00:00Z', windows: [{ start: '22:00', end: '06:00', pricing: { prompt: '0.1', completion: '0.1' } }] } },
      {},
    ]);
    const pools = new RoutewisePools();
    assert.deepEqual(order(scheduled, pools, {}, NOON), ['r0', 'r1', 'r2'], 'unpriced last');
    assert.deepEqual(order(scheduled, pools, {}, Date.parse('2026-12-02T23:00:00Z')), ['r1', 'r0', 'r2'], 'off-peak window');
    assert.deepEqual(order(scheduled, pools, {}, Date.parse('2026-11-30T23:00:00Z')), ['r0', 'r1', 'r2'], 'before effective_at');
  });

  it('matches quota_source exactly: provider, usage_label and unit', () => {
    const q = model([
      { provider_type: 'quota', quota: { limit: 100 }, quota_source: { provider: 'acme', usage_label: 'team-a', unit: 'tokens' } },
      { provider_type: 'on_demand', pricing: { prompt: '1' } },
    ]);
    const pools = new RoutewisePools(() => NOON);
    for (const near of [
      { provider: 'Acme', usage_label: 'team-a', unit: 'tokens' as const },
      { provider: 'acme', usage_label: 'team-a ', unit: 'tokens' as const },
      { provider: 'acme', usage_label: 'team-a', unit: 'prompt_tokens' as const },
      { provider: 'acm', usage_label: 'eteam-a', unit: 'tokens' as const },
    ]) pools.add(near, 1000);
    assert.deepEqual(order(q, pools), ['r0', 'r1'], 'near misses do not spend the budget');
    pools.record(q.routes[0]!, { prompt_tokens: 60, completion_tokens: 39 });
    assert.deepEqual(order(q, pools), ['r0', 'r1'], '99 of 100 tokens used');
    pools.add({ provider: 'acme', usage_label: 'team-a', unit: 'tokens' }, 1);
    assert.deepEqual(order(q, pools), ['r1', 'r0'], 'the exact source spends it');
    assert.deepEqual(quotaSource(model([{ provider_type: 'quota', quota_pool: 'p' }]).routes[0]!), { provider: 'r0', usage_label: 'p', unit: 'requests' }, 'defaults');
  });

  it('breaks ties by weight with the seeded rng, never uses weight 0, treats an unknown limit as on-demand', () => {
    const tied = model([
      { provider_type: 'concurrency', concurrency: { limit: 4 }, weight: 1 },
      { provider_type: 'concurrency', concurrency: { limit: 4 }, weight: 3 },
      { provider_type: 'concurrency', concurrency: { limit: 4 }, weight: 0 },
      { provider_type: 'concurrency', pricing: { prompt: '1' } },
    ]);
    const pools = new RoutewisePools();
    const firsts = new Map<string, number>();
    for (let seed = 0; seed < 400; seed += 1) {
      const o = order(tied, pools, {}, NOON, seed);
      assert.equal(o.length, 3);
      assert.ok(!o.includes('r2'));
      assert.equal(o[2], 'r3', 'no concurrency limit known: ordered with on-demand');
      firsts.set(o[0]!, (firsts.get(o[0]!) ?? 0) + 1);
    }
    assert.ok(firsts.get('r1')! > 2 * firsts.get('r0')!, `weight 3 wins about three times as often: ${JSON.stringify([...firsts])}`);
    assert.deepEqual(order(tied, pools, {}, NOON, 7), order(tied, pools, {}, NOON, 7), 'same seed, same order');
  });

  it('lets settings override pool limits and the objective', () => {
    const pools = new RoutewisePools(() => NOON);
    assert.deepEqual(order(m, pools, { concurrency_limits: { gpu: 0 }, quota_limits: { team: 0 } }), ['r3', 'r0', 'r2', 'r1']);
    const junk = { concurrency_limits: { gpu: '0' }, quota_limits: { team: -1 } } as unknown as RoutewiseSettings;
    assert.deepEqual(order(m, pools, junk), ['r2', 'r1', 'r3', 'r0'], 'unusable stored limits fall back to the routes\' limits');
    const near = model([{ pricing: { prompt: '1.1' }, weight: 1000 }, { pricing: { prompt: '1' }, weight: 0.001 }]);
    assert.deepEqual(order(near, pools, { objective: 'cost' }), ['r1', 'r0']);
    assert.deepEqual(order(near, pools, { objective: 'balanced' }), ['r0', 'r1'], 'within 25 %: the weights decide');
  });

  it('reads router_params and stored settings per model; stored settings win', () => {
    const rw = new Routewise({ now: () => NOON });
    const withParams = model([{}], { router_params: { objective: 'latency', probe_interval_seconds: 30, max_latency_ms: 900 } });
    assert.equal(rw.settingsFor(withParams).objective, 'latency');
    rw.storedSettings = () => ({ m: { objective: 'cost', quota_limits: { team: 5 }, max_latency_ms: 400 } });
    assert.deepEqual(rw.settingsFor(withParams), {
      objective: 'cost', concurrency_limits: undefined, quota_limits: { team: 5 }, probe_interval_seconds: 30, max_latency_ms: 400,
    });
  });

  it('keeps the strategy contract shared with fixed: a permutation of the usable routes, seeded, weight 0 never', () => {
    const mixed = model([
      { provider_type: 'concurrency', concurrency: { limit: 1 }, weight: 2 },
      { provider_type: 'quota', quota: { limit: 1 }, weight: 0 },
      { provider_type: 'on_demand', pricing: { prompt: '1' }, weight: 0.5 },
      { pricing: { prompt: '1' } },
      { provider_type: 'quota', quota: { limit: 1 } },
    ]);
    const strategies: Array<[string, (seed: number) => string[]]> = [
      ['fixed', (seed) => labels(weightedOrder(mixed.routes, seededRng(seed)))],
      ['routewise', (seed) => order(mixed, new RoutewisePools(() => NOON), {}, NOON, seed)],
    ];
    const usable = ['r0', 'r2', 'r3', 'r4'];
    for (const [name, run] of strategies) {
      for (let seed = 0; seed < 50; seed += 1) {
        const o = run(seed);
        assert.deepEqual([...o].sort(), usable, `${name} seed ${seed}: every usable route once, weight 0 never`);
        assert.deepEqual(run(seed), o, `${name} seed ${seed}: deterministic for a seed`);
      }
    }
  });

  it('ENABLE_ROUTEWISE makes routewise the default only over fixed', () => {
    assert.equal(effectiveDefaultRouter('fixed', true), 'routewise');
    assert.equal(effectiveDefaultRouter('fixed', false), 'fixed');
    assert.equal(effectiveDefaultRouter('other', true), 'other');
    const unnamed = model([{}], { router: undefined });
    assert.equal(new Routewise({ defaultRouter: 'routewise' }).applies(unnamed), true);
    assert.equal(new Routewise({ defaultRouter: 'fixed' }).applies(unnamed), false);
    assert.equal(new Routewise({ defaultRouter: 'routewise' }).applies({ ...unnamed, router: 'fixed' }), false);
  });
});
