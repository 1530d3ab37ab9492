/**
 * Adaptive outbound concurrency per (provider label, API key) (docs/routing.md "Adaptive outbound
 * concurrency"): AIMD. A lane starts at `initialLimit`, loses one on each 429 (never below 1),
 * gains one after every `probeSuccessInterval` successes, up to `maxLimit`. A request waits for a
 * permit at most `acquireTimeoutMs`, then fails over (the caller raises a `concurrency` failure,
 * which the breaker ignores). A `Retry-After` on a 429 blocks the lane until it passes. Local hosts
 * are exempt. Timers come from an injected scheduler so tests use a fake clock.
 */

/** Hosts never limited: local engines manage their own queues. */
export const CONCURRENCY_EXEMPT_HOSTS: readonly string[] = Object.freeze(['localhost', '127.0.0.1', '0.0.0.0', 'host.docker.internal']);

export interface ConcurrencyOptions {
  enabled: boolean;
  initialLimit: number;
  maxLimit: number;
  probeSuccessInterval: number;
  acquireTimeoutMs: number;
  /** Host names (as in a URL, lower case) that are never limited. */
  exemptHosts: readonly string[];
  now: () => number;
  /** Schedules `fn` after `ms`; returns a cancel function (default: `setTimeout`). */
  schedule?: (fn: () => void, ms: number) => () => void;
}

/** Why a permit was not granted: the wait timed out, or the lane is in a `Retry-After` pause. */
export class PermitRefusedError extends Error {
  constructor(readonly reason: 'timeout' | 'retry_after', readonly retryAfterMs = 0) {
    super(reason === 'timeout' ? 'timed out waiting for an upstream concurrency permit' : 'upstream asked to retry later (Retry-After)');
    this.name = 'PermitRefusedError';
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  cancel: () => void;
}

/** One (provider label, API key) pair. */
export class Lane {
  limit: number;
  inFlight = 0;
  successes = 0;
  blockedUntil = 0;
  readonly waiters: Waiter[] = [];

  constructor(readonly id: string, initialLimit: number) {
    this.limit = initialLimit;
  }
}

export type PermitOutcome = 'ok' | 'rate_limited' | 'other';

const realSchedule = (fn: () => void, ms: number): (() => void) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export class ConcurrencyLimiter {
  private readonly lanes = new Map<string, Lane>();
  private readonly exempt: ReadonlySet<string>;
  private readonly schedule: (fn: () => void, ms: number) => () => void;

  constructor(private readonly options: ConcurrencyOptions) {
    this.exempt = new Set(options.exemptHosts.map((h) => h.toLowerCase()));
    this.schedule = options.schedule ?? realSchedule;
  }

  /** Whether requests to this host are limited at all. */
  applies(hostname: string): boolean {
    const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    return this.options.enabled && !this.exempt.has(host.toLowerCase());
  }

  /** The lane of a (provider label, key) pair; callers cache it. */
  lane(providerLabel: string, apiKey: string | undefined): Lane {
    const id = `${providerLabel}\n${apiKey ?? ''}`;
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = new Lane(id, this.options.initialLimit);
      this.lanes.set(id, lane);
    }
    return lane;
  }

  /** Milliseconds the lane is still paused by a `Retry-After` (0: usable). */
  pausedFor(lane: Lane): number {
    return Math.max(0, lane.blockedUntil - this.options.now());
  }

  /** Takes a permit without waiting; false when the lane is full or paused. */
  tryAcquire(lane: Lane): boolean {
    if (this.pausedFor(lane) > 0 || lane.inFlight >= lane.limit) return false;
    lane.inFlight += 1;
    return true;
  }

  /**
   * Takes a permit, waiting up to `timeoutMs` (default the acquire timeout; an offload policy's
   * queue wait may be longer); rejects with {@link PermitRefusedError} at once when the lane is
   * paused by `Retry-After`, or when the wait times out.
   */
  acquire(lane: Lane, timeoutMs = this.options.acquireTimeoutMs): Promise<void> {
    const paused = this.pausedFor(lane);
    if (paused > 0) return Promise.reject(new PermitRefusedError('retry_after', paused));
    if (this.tryAcquire(lane)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, cancel: () => undefined };
      waiter.cancel = this.schedule(() => {
        const index = lane.waiters.indexOf(waiter);
        if (index >= 0) lane.waiters.splice(index, 1);
        reject(new PermitRefusedError('timeout'));
      }, timeoutMs);
      lane.waiters.push(waiter);
    });
  }

  /**
   * Returns a permit with what happened: `rate_limited` (a 429) shrinks the limit and, with
   * a `Retry-After` value (seconds or HTTP date), pauses the lane; `ok` counts towards growth;
   * `other` changes nothing.
   */
  release(lane: Lane, outcome: PermitOutcome, retryAfter?: string): void {
    lane.inFlight = Math.max(0, lane.inFlight - 1);
    if (outcome === 'rate_limited') {
      lane.limit = Math.max(1, lane.limit - 1);
      lane.successes = 0;
      const pause = retryAfterMs(retryAfter, this.options.now());
      if (pause > 0) lane.blockedUntil = Math.max(lane.blockedUntil, this.options.now() + pause);
    } else if (outcome === 'ok') {
      lane.successes += 1;
      if (lane.successes >= this.options.probeSuccessInterval) {
        lane.successes = 0;
        lane.limit = Math.min(this.options.maxLimit, lane.limit + 1);
      }
    }
    this.wake(lane);
  }

  private wake(lane: Lane): void {
    if (lane.waiters.length === 0) return;
    const paused = this.pausedFor(lane);
    if (paused > 0) {
      // Waiters fail over rather than sit out the pause.
      for (const w of lane.waiters.splice(0)) {
        w.cancel();
        w.reject(new PermitRefusedError('retry_after', paused));
      }
      return;
    }
    while (lane.waiters.length > 0 && lane.inFlight < lane.limit) {
      const waiter = lane.waiters.shift()!;
      waiter.cancel();
      lane.inFlight += 1;
      waiter.resolve();
    }
  }

  /** Every lane (the metrics read limits and in-flight counts at scrape time). */
  allLanes(): IterableIterator<Lane> {
    return this.lanes.values();
  }

  /** Lanes for `/health/deep` and tests. */
  snapshot(): Array<{ lane: string; limit: number; in_flight: number; waiting: number; paused_ms: number }> {
    return [...this.lanes.values()].map((l) => ({
      lane: l.id.split('\n')[0]!, limit: l.limit, in_flight: l.inFlight, waiting: l.waiters.length, paused_ms: this.pausedFor(l),
    }));
  }
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; 0 when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number {
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - now);
}
