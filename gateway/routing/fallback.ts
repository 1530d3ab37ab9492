/**
 * Tries a request's candidate routes in order (issue 3 §4): connect errors, timeouts, 5xx
 * and 429 move to the next route; a context-length refusal skips routes whose `context_length` is
 * not wider; anything else (401, other 4xx) is surfaced at once. A pinned request never falls back.
 * When every route fails, the first (primary) error is raised, as the client error it maps to
 * ({@link clientErrorFor}), and the attempt list logged. Other errors (the client left, a 501
 * kind, a bug) pass through unchanged.
 *
 * An {@link AttemptObserver} (the routing core's per-request ticket) admits each route (circuit
 * breaker) and hears every outcome (breaker, affinity, prefill backlog). Routes it refuses are
 * skipped; when it refused every route and none was tried, the request fails with 503
 * `no_provider_available` naming the endpoints and their circuit states.
 */
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import type { Route } from '../registry';
import { failedAttempt, UpstreamError, type FailedAttempt } from '../upstream/upstream-error';
import { OffloadNow, type OffloadRun } from './offload';

export interface FallbackResult<T> {
  value: T;
  route: Route;
  failedAttempts: FailedAttempt[];
}

export interface FallbackOptions {
  modelId: string;
  /** The request's state; its logger is created only if something is logged. */
  state: { readonly log: Logger };
  /** `X-Route-Pin`: exactly one candidate and no fallback. */
  pinned: boolean;
  /** Log line for an upstream 401 (chat: `upstream_auth_misconfig`). */
  onUpstreamAuthFailure: (route: Route, err: UpstreamError) => void;
  /** Breaker admission and outcome reports; absent: every route is admitted, nothing recorded. */
  observer?: AttemptObserver | undefined;
  /**
   * Offload state of a model whose policy is in force: `candidates` are then the local routes
   * followed by the offload route (absent when the prompt may not be offloaded). An attempt that
   * throws {@link OffloadNow} is abandoned and the offload route goes next; reached in order it is
   * the last resort. A failed offload is recorded and the remaining local routes carry on.
   */
  offload?: OffloadRun | undefined;
  /** Called once before the request's error is raised (every route failed or none could serve it), with the failed attempts. */
  onFailure?: ((failed: readonly FailedAttempt[]) => void) | undefined;
}

/** What the fallback driver tells the routing core about each attempt. */
export interface AttemptObserver {
  /** Whether the route may be tried now (false: skipped, e.g. circuit open or probe in flight). */
  admit(route: Route): boolean;
  succeeded(route: Route): void;
  failed(route: Route, err: UpstreamError): void;
  /** The attempt ended with no verdict on the upstream (client left, a bug). */
  abandoned(route: Route): void;
  /** Why the routes were refused, for the 503 message (`AllCircuitsOpenError`). */
  describeRefused(routes: readonly Route[]): string;
}

export async function runWithFallback<T>(candidates: readonly Route[], attempt: (route: Route) => Promise<T>, options: FallbackOptions): Promise<FallbackResult<T>> {
  const failed: FailedAttempt[] = [];
  let primary: UpstreamError | undefined;
  let contextLimit = 0;
  let refused: Route[] | undefined;
  const observer = options.observer;
  const offload = options.offload;
  // Only an offload run reorders (the offload route moves up after an expired wait): copy then.
  const order = offload ? [...candidates] : candidates;
  let previous: Route | undefined;
  let stopped = false;
  for (let i = 0; i < order.length; i += 1) {
    const route = order[i]!;
    if (contextLimit > 0 && route.contextLength <= contextLimit) continue;
    if (observer && !observer.admit(route)) {
      (refused ??= []).push(route);
      continue;
    }
    const offloading = offload !== undefined && route === offload.route;
    if (offloading) offload.begin(previous);
    previous = route;
    let value: T;
    try {
      value = await attempt(route);
    } catch (err) {
      if (err instanceof OffloadNow && offload && offload.request(err.trigger, route)) {
        observer?.abandoned(route);
        moveNext(order as Route[], offload.route, i);
        continue;
      }
      if (!(err instanceof UpstreamError)) {
        observer?.abandoned(route);
        throw err;
      }
      observer?.failed(route, err);
      failed.push(failedAttempt(route, err));
      primary ??= err;
      if (offloading) offload.failed();
      if (err.options.upstreamStatus === 401) options.onUpstreamAuthFailure(route, err);
      if (err.options.contextLength) contextLimit = Math.max(contextLimit, route.contextLength);
      if (!err.retryable || options.pinned) {
        stopped = true;
        break;
      }
      continue;
    }
    observer?.succeeded(route);
    return { value, route, failedAttempts: failed };
  }
  options.onFailure?.(failed);
  if (offload && !offload.eligible && !stopped) {
    // The offload route could have taken it but the prompt is above its max_input_tokens: 503, no provider available.
    const why = primary ? `every other route failed (${primary.message})` : 'no other route can serve it';
    throw new AppError('no_provider_available',
      `No provider available for model ${options.modelId}: the prompt is estimated above the offload route's max_input_tokens (${offload.policy.max_input_tokens}) and ${why}`,
      primary ? { cause: primary } : {});
  }
  if (!primary) {
    const why = refused && observer ? `AllCircuitsOpenError: ${observer.describeRefused(refused)}` : 'no route can serve it';
    throw new AppError('no_provider_available', `No provider available for model ${options.modelId}: ${why}`);
  }
  options.state.log.warn({ event: 'all_routes_failed', model: options.modelId, attempts: failed }, `Every route of ${options.modelId} failed; returning the primary error`);
  throw clientErrorFor(primary);
}

/** Moves `route` (if still ahead) to just after position `i`. */
function moveNext(order: Route[], route: Route, i: number): void {
  const at = order.indexOf(route, i + 1);
  if (at > i + 1) {
    order.splice(at, 1);
    order.splice(i + 1, 0, route);
  }
}

/** The client-facing error for an upstream failure (the upstream's credential is never named). */
export function clientErrorFor(err: UpstreamError): AppError {
  const status = err.status;
  if (err.failure === 'concurrency') {
    const headers: Record<string, string> = err.options.retryAfter ? { 'Retry-After': err.options.retryAfter } : {};
    return status === 429
      ? new AppError('rate_limited', `Upstream rate limit: ${err.message}`, { cause: err, headers })
      : new AppError('no_provider_available', `No provider available: ${err.message}`, { cause: err, headers });
  }
  if (err.options.upstreamStatus === 401) {
    return new AppError('unauthorized', "The upstream provider rejected the gateway's credential", { status: 401, cause: err });
  }
  if (status === 429) {
    return new AppError('rate_limited', `Upstream rate limit: ${err.message}`, { cause: err, headers: err.options.retryAfter ? { 'Retry-After': err.options.retryAfter } : {} });
  }
  if (status === 504) return new AppError('gateway_timeout', 'The upstream did not answer in time', { cause: err });
  if (status >= 400 && status < 500) return new AppError('invalid_request', err.message, { status, cause: err });
  return new AppError('upstream_error', `Upstream error: ${err.message}`, { status: 502, cause: err });
}
