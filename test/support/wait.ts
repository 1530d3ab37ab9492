/**
 * Waiting in tests without asserting on time: poll a condition until it holds (or gives a value),
 * failing with `what` after a generous deadline. For effects that land asynchronously (log lines
 * written when a response closes, rows flushed by the request log, caches refreshed).
 */
import assert from 'node:assert/strict';

/** Resolves with the first truthy result of `check`; fails after `timeoutMs`. */
export async function waitFor<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
