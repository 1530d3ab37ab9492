/**
 * Runs an async function over a list with at most `limit` calls in flight at once, and answers the
 * results in the list's order (whatever order the calls finish in). Used where an operation may send only
 * so many requests together (a batch action runs at most four at once; docs/sandboxes.md "Batch actions").
 *
 * Each call starts as soon as a slot is free, never before: with `limit` 4 the fifth item starts
 * when the first call to finish has finished. `fn` should not throw: a thrown error rejects the
 * whole map once the calls already in flight have settled, and starts no further calls.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`mapBounded: limit must be a positive integer, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const index = next;
      next += 1;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
  return results;
}
