/**
 * Fixed-window request counters per key (sign-up and login rate limits). In memory, per process;
 * windows that have ended are dropped lazily, so memory follows the number of active keys.
 */
export class FixedWindowLimiter {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(readonly limit: number, readonly windowMs: number, private readonly now: () => number = Date.now) {}

  /** Counts one attempt for `key`; false when the key is over its limit in the current window. */
  take(key: string): boolean {
    const now = this.now();
    if (this.windows.size > 10_000) this.sweep(now);
    const window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      this.windows.set(key, { start: now, count: 1 });
      return true;
    }
    window.count += 1;
    return window.count <= this.limit;
  }

  /** Seconds until `key` may try again (0 when it may now). */
  retryAfterSeconds(key: string): number {
    const window = this.windows.get(key);
    if (!window || window.count <= this.limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.windowMs - this.now()) / 1000));
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (now - window.start >= this.windowMs) this.windows.delete(key);
  }
}
