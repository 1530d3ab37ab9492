/**
 * Orders a model's routes for one request: a weighted draw without replacement, so the first
 * route follows the configured weights and the rest form the fallback order. Routes of weight 0
 * are never used, not even as fallback. Pure: the random source is passed in.
 */
import type { Route } from '../registry';

/** A function returning a uniform number in [0, 1). */
export type Rng = () => number;

export function weightedOrder(routes: readonly Route[], rng: Rng): Route[] {
  const pool = routes.filter((r) => r.weight > 0);
  if (pool.length <= 1) return pool;
  const ordered: Route[] = [];
  let total = pool.reduce((sum, r) => sum + r.weight, 0);
  while (pool.length > 0) {
    let ticket = rng() * total;
    let index = 0;
    while (index < pool.length - 1 && ticket >= pool[index]!.weight) {
      ticket -= pool[index]!.weight;
      index += 1;
    }
    const [picked] = pool.splice(index, 1);
    ordered.push(picked!);
    total -= picked!.weight;
  }
  return ordered;
}

/** A small seeded generator (mulberry32) for tests and reproducible runs. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
