/**
 * The retry policy of agent drivers (docs/agent-events.md "Retry policy"), as pure functions: up to 15
 * retries; exponential delay from 500 ms capped at 32 s plus up to 25 % jitter; an integer
 * `Retry-After` (seconds) is honoured when it asks for longer; ordinary mode stops when the
 * required delay exceeds 60 s; no wait ever ends past the turn's deadline.
 * Used by the built-in driver (gateway 429/5xx/connection errors) and the CLI driver (retryable runs).
 */

/** Most retries of one operation (the 16th failure is final). */
export const MAX_RETRIES = 15;
/** Delay before the first retry, before jitter. */
export const BASE_DELAY_MS = 500;
/** Cap of the exponential delay, before jitter. */
export const MAX_BACKOFF_MS = 32_000;
/** Largest share of the delay added as random jitter. */
export const JITTER_SHARE = 0.25;
/** In ordinary mode a required delay above this ends the retries. */
export const ORDINARY_MAX_DELAY_MS = 60_000;

/**
 * `ordinary` (default) gives up when the required delay exceeds 60 s; `persistent` waits as long
 * as it is asked to, still bounded by the retry count and the turn deadline.
 */
export type RetryMode = 'ordinary' | 'persistent';

export interface RetryInput {
  /** 1-based number of the retry being considered (1 = the first retry after the first failure). */
  attempt: number;
  /** The raw `Retry-After` value (header string or a number of seconds), if any. */
  retryAfter?: string | number | null;
  /** Current time and the turn's deadline, epoch ms. */
  now: number;
  deadline: number;
  /** Uniform in [0, 1); injected so tests are deterministic. */
  random: () => number;
  mode?: RetryMode;
}

export type RetryDecision = { retry: true; waitMs: number } | { retry: false; reason: string };

/** Exponential delay of retry `attempt` before jitter: min(500 ms · 2^(attempt-1), 32 s). */
export function backoffMs(attempt: number): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 16));
  return Math.min(BASE_DELAY_MS * 2 ** exponent, MAX_BACKOFF_MS);
}

/**
 * Seconds asked for by a `Retry-After` value, when it is a non-negative integer (a string of
 * digits or an integer number). HTTP dates, fractions, negatives and garbage give `undefined`
 * (ignored: the exponential delay applies).
 */
export function parseRetryAfterSeconds(value: string | number | null | undefined): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (!/^\d{1,9}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

/** Decides whether to retry and how long to wait first. */
export function retryDecision(input: RetryInput): RetryDecision {
  const mode = input.mode ?? 'ordinary';
  if (input.attempt > MAX_RETRIES) return { retry: false, reason: `gave up after ${MAX_RETRIES} retries` };
  const base = backoffMs(input.attempt);
  const retryAfterSeconds = parseRetryAfterSeconds(input.retryAfter);
  const retryAfterMs = retryAfterSeconds === undefined ? 0 : retryAfterSeconds * 1000;
  const requiredMs = Math.max(base, retryAfterMs);
  if (mode === 'ordinary' && requiredMs > ORDINARY_MAX_DELAY_MS) {
    return { retry: false, reason: `the required delay of ${Math.ceil(requiredMs / 1000)} s exceeds ${ORDINARY_MAX_DELAY_MS / 1000} s` };
  }
  const jitter = Math.floor(base * JITTER_SHARE * clampUnit(input.random()));
  const waitMs = retryAfterMs > base ? retryAfterMs : base + jitter;
  if (input.now + waitMs >= input.deadline) {
    return { retry: false, reason: 'waiting would pass the turn deadline' };
  }
  return { retry: true, waitMs };
}

function clampUnit(value: number): number {
  if (!Number.isFinite(value) || value < 0) return 0;
  return value >= 1 ? 0.999999 : value;
}

/** Sleeps `ms`, ending early (rejecting with an AbortError) when `signal` aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new DriverAbortedError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new DriverAbortedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Thrown by drivers when the turn's signal aborts (cancelled or timed out by the host). */
export class DriverAbortedError extends Error {
  constructor(message = 'The turn was stopped.') {
    super(message);
    this.name = 'AbortError';
  }
}
