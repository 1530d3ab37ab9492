/**
 * Calls upstreams over keep-alive pools, one per origin: the lean HTTP/1.1 client of
 * `http1-pool.ts` for `http://` origins (unless `UPSTREAM_HTTP_CLIENT=undici`), undici for TLS.
 * Targets (origin + path, request headers per key) are computed once per route and cached. Each
 * call is one exchange (`exchange.ts`) dispatched straight to the pool: JSON answers are read
 * whole (bounded), streams are pushed to the caller chunk by chunk with backpressure, never
 * buffered; error bodies are read with a bound.
 */
import { Pool } from 'undici';
import type { ClientAbort } from '../../lib/http/client-abort';
import { chatUrlFor, embeddingsUrl, messagesUrlsFor, resolveAdapterKind, responsesUrlFor, upstreamHeaders, KeyPool, type AdapterProfile, type HeaderOptions } from '../adapters';
import type { Route } from '../registry';
import { PermitRefusedError, type ConcurrencyLimiter, type Lane, type PermitOutcome } from '../routing/concurrency';
import { Http1Pool } from './http1-pool';
import { BufferedExchange, ExchangeError, StreamExchange, type ExchangeFailure, type UpstreamStream } from './exchange';
import { chatCompletionOf, type MessagesResponse } from '../translate/messages-upstream/response';
import { openTranslatedStream } from './messages-stream';
import { httpError, transportError, UpstreamError } from './upstream-error';

export type { UpstreamStream, StreamSink } from './exchange';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
  /** The client for `http:` origins (`UPSTREAM_HTTP_CLIENT`); TLS origins always use undici. Default native. */
  plainHttpClient?: 'native' | 'undici';
}

/** What a call needs of a pool: undici's, or the lean one for plain HTTP. */
interface OriginPool {
  dispatch(request: { method: string; path: string; headers: Record<string, string>; body: string }, handler: BufferedExchange | StreamExchange): void;
  close(): Promise<void>;
}

/**
 * What a call is for: chat completions (or a messages call on message-format routes, answers
 * translated to chat), embeddings, token counting, `messages`: a messages-API body on a
 * message-format route whose answer is returned as the upstream sent it (the messages surface's
 * pass-through), or a Responses-API call (routes with `upstream_api: responses`, sent as is).
 */
export type UpstreamSurface = 'chat' | 'embeddings' | 'count_tokens' | 'messages' | 'responses';

interface Target {
  origin: string;
  path: string;
  /** The path of a streamed call (differs from `path` on `:rawPredict` routes only). */
  streamPath: string;
  /** A message-format route's chat target: bodies are messages-API bodies, answers are translated back. */
  translated: boolean;
  keys: KeyPool;
  profile: AdapterProfile;
  /** Request headers by API key ('' for none), built once. */
  headers: Map<string, Record<string, string>>;
  /** Whether the outbound concurrency limit applies to this host. */
  limited: boolean;
  /** Concurrency lanes by API key, filled lazily. */
  lanes: Map<string, Lane>;
}

/**
 * The largest 2xx JSON body read from an upstream (a chat completion is a few KiB; a large
 * embeddings batch tens of MiB). A bigger answer fails the attempt (502, another route may help).
 */
export const UPSTREAM_JSON_LIMIT = 128 * 1024 * 1024;

/** How one call is admitted (absent: the defaults). */
export interface Admission {
  /** Longest wait for an outbound concurrency permit (default the acquire timeout). */
  acquireTimeoutMs?: number;
  /** Called once the request is admitted (permit held, or none needed), just before it is sent. */
  admitted?: () => void;
}

/** Whether `err` is a concurrency permit wait that timed out (the route was not called). */
export function isPermitTimeout(err: unknown): boolean {
  return err instanceof UpstreamError && err.failure === 'concurrency' && err.cause instanceof PermitRefusedError && err.cause.reason === 'timeout';
}

export class UpstreamClient {
  private readonly pools = new Map<string, OriginPool>();
  private readonly targets: Record<UpstreamSurface, WeakMap<Route, Target>> = { chat: new WeakMap(), embeddings: new WeakMap(), count_tokens: new WeakMap(), messages: new WeakMap(), responses: new WeakMap() };

  /** `site`: the site identity's headers options (aggregator `HTTP-Referer`/`X-Title`), fixed for the process. */
  constructor(private readonly timeouts: UpstreamTimeouts, private readonly site: HeaderOptions = {}, private readonly concurrency?: ConcurrencyLimiter) {}

  private pool(origin: string): OriginPool {
    let pool = this.pools.get(origin);
    if (!pool) {
      const keepAliveMs = 30_000;
      pool = origin.startsWith('http:') && this.timeouts.plainHttpClient !== 'undici'
        ? new Http1Pool(origin, { connectTimeoutMs: this.timeouts.connectMs, headersTimeoutMs: this.timeouts.firstByteMs, bodyTimeoutMs: this.timeouts.idleMs, keepAliveTimeoutMs: keepAliveMs })
        : new Pool(origin, { connect: { timeout: this.timeouts.connectMs }, headersTimeout: this.timeouts.firstByteMs, bodyTimeout: this.timeouts.idleMs, keepAliveTimeout: keepAliveMs });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  private target(route: Route, surface: UpstreamSurface): Target {
    const cache = this.targets[surface];
    let target = cache.get(route);
    if (!target) {
      const profile = resolveAdapterKind(route.kind);
      const urls = profile.messages && surface !== 'embeddings' && surface !== 'responses' ? messagesUrlsFor(profile.messages, route.baseUrl, route.providerModelId) : undefined;
      if (surface === 'count_tokens' && urls?.countTokens === undefined) throw new Error(`${route.kind} routes have no token counting`);
      if (surface === 'messages' && urls === undefined) throw new Error(`${route.kind} routes speak no messages API`);
      const call = surface === 'chat' || surface === 'messages';
      const raw = surface === 'responses' ? responsesUrlFor(profile, route.baseUrl) : urls === undefined
        ? (surface === 'chat' ? chatUrlFor(profile, route.baseUrl) : embeddingsUrl(route.baseUrl, route.embeddingsPath))
        : (call ? urls.create : urls.countTokens!);
      const url = new URL(raw);
      const streamUrl = urls !== undefined && call ? new URL(urls.stream) : url;
      target = {
        origin: url.origin, path: `${url.pathname}${url.search}`, streamPath: `${streamUrl.pathname}${streamUrl.search}`,
        translated: urls !== undefined && surface === 'chat', keys: new KeyPool(route.apiKeys), profile,
        headers: new Map(), limited: this.concurrency?.applies(url.hostname) ?? false, lanes: new Map(),
      };
      cache.set(route, target);
    }
    return target;
  }

  private headers(target: Target, key: string | undefined): Record<string, string> {
    let headers = target.headers.get(key ?? '');
    if (!headers) {
      headers = upstreamHeaders(key, target.profile, this.site);
      target.headers.set(key ?? '', headers);
    }
    return headers;
  }

  /**
   * Sends `body` once the call is admitted (a concurrency permit when the host is limited). The
   * permit is held until the exchange ends (a stream holds it to its end); `settled` releases it.
   */
  private async dispatch<E extends BufferedExchange | StreamExchange>(route: Route, target: Target, path: string, body: string, admission: Admission | undefined, make: (settled: (failure?: ExchangeFailure) => void) => E, extra?: Readonly<Record<string, string>>): Promise<E> {
    let key: string | undefined;
    let lane: Lane | undefined;
    if (!target.limited || !this.concurrency) key = target.keys.next();
    else ({ key, lane } = await this.permit(route, target, admission?.acquireTimeoutMs));
    admission?.admitted?.();
    const limiter = this.concurrency;
    const exchange = make(lane === undefined || !limiter ? noop : (failure) => {
      const { outcome, retryAfter } = permitOutcome(failure);
      limiter.release(lane, outcome, retryAfter);
    });
    const headers = this.headers(target, key);
    this.pool(target.origin).dispatch({ method: 'POST', path, headers: extra === undefined ? headers : { ...extra, ...headers }, body }, exchange);
    return exchange;
  }

  /**
   * POSTs a JSON body and parses the 2xx answer. Rejects with an {@link UpstreamError} for
   * transport failures, non-2xx answers (their body read, bounded) and bodies that break off, are
   * too large or are not JSON (all before anything reached the client, so another route may help).
   * A message-format route's chat answer is translated into a chat completion. `headers`: sent
   * besides the route's own (which win), e.g. a client's `anthropic-beta`.
   */
  async postJson<T>(route: Route, surface: UpstreamSurface, body: string, signal: ClientAbort, admission?: Admission, headers?: Readonly<Record<string, string>>): Promise<T> {
    const target = this.target(route, surface);
    const exchange = await this.dispatch(route, target, target.path, body, admission, (settled) => new BufferedExchange(signal, UPSTREAM_JSON_LIMIT, settled), headers);
    let raw: Buffer;
    try {
      raw = await exchange.result;
    } catch (err) {
      throw upstreamFailure(err, signal, 'body');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      throw new UpstreamError(`upstream returned a ${surface} body that is not JSON`, 'http', 502, true, { cause: err });
    }
    return (target.translated ? chatCompletionOf(parsed as MessagesResponse) : parsed) as T;
  }

  /**
   * POSTs a chat body and resolves once the first chunk of a 2xx streamed answer has arrived (the
   * moment a stream commits to its route). Everything before that rejects with a retryable
   * {@link UpstreamError}, as {@link postJson} does. A message-format route's stream is translated
   * into chat chunks as it arrives and opens with its first chat chunk (`messages-stream.ts`);
   * with `surface: 'messages'` it is the upstream's own events, opened at the first byte, and
   * with `surface: 'responses'` a Responses-API stream, returned as the upstream sends it.
   */
  async openStream(route: Route, body: string, signal: ClientAbort, admission?: Admission, options: { surface?: 'chat' | 'messages' | 'responses'; headers?: Readonly<Record<string, string>> } = {}): Promise<UpstreamStream> {
    const target = this.target(route, options.surface ?? 'chat');
    const exchange = await this.dispatch(route, target, target.streamPath, body, admission, (settled) => new StreamExchange(signal, settled), options.headers);
    let opened: UpstreamStream;
    try {
      opened = await exchange.opened;
    } catch (err) {
      throw upstreamFailure(err, signal, 'first_byte');
    }
    if (!target.translated) return opened;
    return openTranslatedStream(opened, (err) => upstreamFailure(err, signal, 'first_byte'));
  }

  /** `input_tokens` of a token-count call on a message-format route (`body` already in the upstream's shape). */
  async countTokens(route: Route, body: string, signal: ClientAbort, headers?: Readonly<Record<string, string>>): Promise<number> {
    const answer = await this.postJson<{ input_tokens?: unknown }>(route, 'count_tokens', body, signal, undefined, headers);
    if (typeof answer?.input_tokens !== 'number') throw new UpstreamError('upstream token count carries no input_tokens', 'http', 502, true);
    return answer.input_tokens;
  }

  /**
   * A concurrency permit for one of the route's keys: the first key whose lane has room, else a
   * wait on the next key's lane. Keys paused by `Retry-After` are skipped; when every key is
   * paused or the wait times out the route fails over (a `concurrency` failure, ignored by the
   * breaker).
   */
  private async permit(route: Route, target: Target, timeoutMs: number | undefined): Promise<{ key: string | undefined; lane: Lane }> {
    const limiter = this.concurrency!;
    const tries = Math.max(1, target.keys.size);
    let waitOn: { key: string | undefined; lane: Lane } | undefined;
    let pausedMs = Infinity;
    for (let i = 0; i < tries; i += 1) {
      const key = target.keys.next();
      const lane = this.lane(route, target, key);
      const paused = limiter.pausedFor(lane);
      if (paused > 0) {
        pausedMs = Math.min(pausedMs, paused);
        continue;
      }
      if (limiter.tryAcquire(lane)) return { key, lane };
      waitOn ??= { key, lane };
    }
    if (!waitOn) {
      const seconds = String(Math.ceil(pausedMs / 1000));
      throw new UpstreamError(`${route.providerLabel} asked to retry later (Retry-After ${seconds}s)`, 'concurrency', 429, true, { retryAfter: seconds });
    }
    try {
      await limiter.acquire(waitOn.lane, timeoutMs);
    } catch (err) {
      if (!(err instanceof PermitRefusedError)) throw err;
      const retryAfter = err.reason === 'retry_after' ? String(Math.ceil(err.retryAfterMs / 1000)) : undefined;
      throw new UpstreamError(`${route.providerLabel}: ${err.message}`, 'concurrency', err.reason === 'retry_after' ? 429 : 503, true, {
        cause: err, ...(retryAfter ? { retryAfter } : {}),
      });
    }
    return waitOn;
  }

  private lane(route: Route, target: Target, key: string | undefined): Lane {
    const id = key ?? '';
    let lane = target.lanes.get(id);
    if (!lane) {
      lane = this.concurrency!.lane(route.providerLabel, key);
      target.lanes.set(id, lane);
    }
    return lane;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

function noop(): void {}

/** How a permit is given back when an exchange ends (absent failure: it completed). */
function permitOutcome(failure: ExchangeFailure | undefined): { outcome: PermitOutcome; retryAfter?: string } {
  if (failure?.kind === 'refused') {
    return failure.answer.statusCode === 429 ? { outcome: 'rate_limited', retryAfter: failure.answer.retryAfter } : { outcome: 'other' };
  }
  // A 2xx answer that later broke off was still admitted by the upstream.
  if (failure?.kind === 'transport' && failure.phase === 'headers') return { outcome: 'other' };
  return { outcome: 'ok' };
}

/**
 * The {@link UpstreamError} for an exchange that failed before it produced its result; a call
 * the client abandoned rethrows the abort as it is.
 */
function upstreamFailure(err: unknown, signal: ClientAbort, stage: 'body' | 'first_byte'): unknown {
  if (signal.aborted) return (err instanceof ExchangeError && err.cause) || err;
  if (!(err instanceof ExchangeError)) return err;
  const { failure } = err;
  switch (failure.kind) {
    case 'refused':
      return httpError(failure.answer.statusCode, failure.answer.body, failure.answer.retryAfter);
    case 'empty':
      return new UpstreamError('upstream closed the stream without sending data', 'stream', 502, true);
    case 'too_large':
      return new UpstreamError(`upstream answer is larger than ${failure.limit} bytes`, 'http', 502, true);
    case 'transport': {
      if (failure.phase === 'headers') return transportError(failure.error, 'headers');
      if (stage === 'body') return new UpstreamError(`upstream response failed: ${failure.error.message}`, 'stream', 502, true, { cause: failure.error });
      const timedOut = (failure.error as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
      return new UpstreamError(`upstream stream failed before the first byte: ${failure.error.message}`, timedOut ? 'timeout' : 'stream', timedOut ? 504 : 502, true, { cause: failure.error });
    }
  }
}

export { UpstreamError };
