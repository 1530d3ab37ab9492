/**
 * The model relay's retries (docs/agent-drivers.md "Retries"): the native CLIs reach the gateway
 * only through the relay, so the relay applies the drivers' one retry policy
 * (retry-policy.ts) to every CLI, and the CLIs' own retries are turned off. A retryable answer
 * (429, 408, 5xx, or no answer at all) is retried only before anything of it went to the CLI: the
 * relay decides on the status line, so a stream already passed on is never repeated.
 */
import { abortableSleep, parseRetryAfterSeconds, retryDecision, type RetryMode } from './retry-policy';

/** How the relay retries; absent in {@link ModelRelayOptions} means it never retries. */
export interface RelayRetryOptions {
  /** The turn's deadline (epoch ms): no wait ends past it. */
  deadline: number;
  mode?: RetryMode;
  /** Injected in tests; `Date.now`, `Math.random` and a real (abortable) sleep by default. */
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Told of each retry before its wait (the turn's `retry` event). */
  onRetry?: (retry: RelayRetry) => void;
}

/** One retry the relay decided on. */
export interface RelayRetry {
  /** 1 for the first retry. */
  attempt: number;
  waitMs: number;
  /** The gateway's status, null when it could not be reached. */
  status: number | null;
  /** The integer `Retry-After` (seconds) the gateway sent, if any. */
  retryAfter?: number;
  reason: string;
}

/** One try's outcome as the retry loop sees it. */
export interface RelayTry<T> {
  value: T;
  /** The gateway's status, null when it could not be reached. */
  status: number | null;
  retryAfter?: string;
  /** A short description for the retry event, e.g. `HTTP 503`. */
  reason: string;
}

export interface RelayRetryOutcome<T> {
  value: T;
  /** Why the relay stopped retrying a retryable answer (then `value` is that last answer). */
  gaveUp?: string;
}

/** Statuses worth another try: rate limits, timeouts and server errors (the built-in driver's set). */
export function isRetryableStatus(status: number | null): boolean {
  return status === null || status === 429 || status === 408 || status >= 500;
}

/**
 * Sends with `send` until the answer is not retryable or the policy says stop. A retried answer is
 * handed to `discard` (its body is dropped); the last one is returned for the caller to pass on.
 */
export async function sendWithRetries<T>(
  send: () => Promise<RelayTry<T>>,
  discard: (value: T) => void,
  options: RelayRetryOptions,
  signal: AbortSignal,
): Promise<RelayRetryOutcome<T>> {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? abortableSleep;
  for (let attempt = 1; ; attempt += 1) {
    const tried = await send();
    if (signal.aborted || !isRetryableStatus(tried.status)) return { value: tried.value };
    const decision = retryDecision({ attempt, retryAfter: tried.retryAfter, now: now(), deadline: options.deadline, random, ...(options.mode ? { mode: options.mode } : {}) });
    if (!decision.retry) {
      return { value: tried.value, gaveUp: `The gateway answered ${tried.reason} and the model relay stopped retrying: ${decision.reason}` };
    }
    discard(tried.value);
    const retryAfter = parseRetryAfterSeconds(tried.retryAfter);
    options.onRetry?.({ attempt, waitMs: decision.waitMs, status: tried.status, ...(retryAfter !== undefined ? { retryAfter } : {}), reason: tried.reason });
    await sleep(decision.waitMs, signal);
  }
}

/** The turn's `retry` event of a relay retry (docs/agent-events.md). */
export function relayRetryEvent(retry: RelayRetry): Record<string, unknown> {
  return {
    attempt: retry.attempt, wait_ms: retry.waitMs, status: retry.status,
    ...(retry.retryAfter !== undefined ? { retry_after: retry.retryAfter } : {}), reason: retry.reason, source: 'relay',
  };
}
