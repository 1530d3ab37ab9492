import assert from 'node:assert/strict';
import { seededRng, weightedOrder } from '../../gateway/routing/weighted-order';
import type { Route } from '../../gateway/registry';

const route = (endpointId: string, weight: number) => ({ endpointId, weight } as unknown as Route);

describe('weighted route order', () => {
  it('follows the weights for the first pick (seeded rng), over many draws', () => {
    const routes = [route('a', 3), route('b', 1), route('c', 0)];
    const rng = seededRng(42);
    const first: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 20_000; i += 1) first[weightedOrder(routes, rng)[0]!.endpointId]! += 1;
    assert.equal(first.c, 0);
    const share = first.a! / 20_000;
    assert.ok(share > 0.73 && share < 0.77, `share of a: ${share}`);
  });

  it('lists every positive-weight route exactly once and never a weight-0 route', () => {
    const rng = seededRng(7);
    for (let i = 0; i < 200; i += 1) {
      const order = weightedOrder([route('a', 1), route('b', 2), route('z', 0), route('c', 0.5)], rng).map((r) => r.endpointId);
      assert.deepEqual([...order].sort(), ['a', 'b', 'c']);
    }
  });

  it('is deterministic for a given rng', () => {
    const routes = [route('a', 1), route('b', 1), route('c', 1)];
    const orders = (seed: number) => {
      const rng = seededRng(seed);
      return Array.from({ length: 5 }, () => weightedOrder(routes, rng).map((r) => r.endpointId).join(''));
    };
    assert.deepEqual(orders(3), orders(3));
    assert.notDeepEqual(orders(3), orders(4));
    assert.deepEqual(weightedOrder(routes, () => 0).map((r) => r.endpointId), ['a', 'b', 'c']);
    assert.deepEqual(weightedOrder(routes, () => 0.999).map((r) => r.endpointId), ['c', 'b', 'a']);
  });
});
