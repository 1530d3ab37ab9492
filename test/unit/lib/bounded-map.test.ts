/**
 * mapBounded: never more calls in flight than the limit (counted by the calls themselves, each held
 * open until the test releases it), the limit reached when there is work for it, results in the
 * list's order whatever order the calls finish in, and a failure that starts nothing further.
 */
import assert from 'node:assert/strict';
import { mapBounded } from '../../../lib/bounded-map';

/** A call the test finishes by hand, counting how many are open at once. */
function gate() {
  let open = 0;
  let peak = 0;
  const waiting: Array<() => void> = [];
  return {
    get open() { return open; },
    get peak() { return peak; },
    async call<R>(value: R): Promise<R> {
      open += 1;
      peak = Math.max(peak, open);
      await new Promise<void>((resolve) => waiting.push(resolve));
      open -= 1;
      return value;
    },
    /** Finishes the newest open call first (so calls finish out of order). */
    releaseNewest(): boolean {
      const release = waiting.pop();
      release?.();
      return release !== undefined;
    },
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('mapBounded', () => {
  it('keeps at most `limit` calls in flight, reaches the limit, and answers in the list order', async () => {
    const g = gate();
    const items = Array.from({ length: 11 }, (_, i) => i);
    const done = mapBounded(items, 4, (item) => g.call(item * 10));
    const openSeen: number[] = [];
    await settle();
    while (g.open > 0) {
      openSeen.push(g.open);
      assert.ok(g.releaseNewest());
      await settle();
    }
    assert.deepEqual(await done, items.map((i) => i * 10));
    assert.equal(g.peak, 4);
    assert.deepEqual(openSeen.slice(0, 8), [4, 4, 4, 4, 4, 4, 4, 4], 'a freed slot is taken at once while items remain');
  });

  it('runs everything at once below the limit, and nothing for an empty list', async () => {
    const g = gate();
    const done = mapBounded([1, 2], 4, (item) => g.call(item));
    await settle();
    assert.equal(g.open, 2);
    while (g.releaseNewest()) await settle();
    assert.deepEqual(await done, [1, 2]);
    assert.deepEqual(await mapBounded([], 4, () => Promise.reject(new Error('never called'))), []);
  });

  it('a failure rejects the map once the calls in flight settle, and starts no further calls', async () => {
    const started: number[] = [];
    const done = mapBounded([0, 1, 2, 3, 4, 5], 2, async (item) => {
      started.push(item);
      await settle();
      if (item === 1) throw new Error('item 1 failed');
      return item;
    });
    await assert.rejects(done, /item 1 failed/);
    assert.ok(started.length <= 3, `started ${started.join(',')}`);
  });

  it('refuses a limit that is not a positive integer', async () => {
    await assert.rejects(mapBounded([1], 0, (x) => Promise.resolve(x)), RangeError);
    await assert.rejects(mapBounded([1], 1.5, (x) => Promise.resolve(x)), RangeError);
  });
});
