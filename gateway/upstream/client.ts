/**
 * Calls upstreams over keep-alive undici pools (one per origin). Targets (origin + path) are
 * computed once per route and cached. Responses are returned unread so streams are piped, never
 * buffered; error bodies are read with a bound.
 */
import { Pool, type Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import type { ClientAbort } from '../../lib/http/client-abort';
import { chatCompletionsUrl, embeddingsUrl, resolveAdapterKind, upstreamHeaders, KeyPool, type AdapterProfile } from '../adapters';
import type { Route } from '../registry';
import { PermitRefusedError, type ConcurrencyLimiter, type Lane } from '../routing/concurrency';
import { httpError, transportError, UpstreamError } from './upstream-error';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

interface Target {
  origin: string;
  path: string;
  keys: KeyPool;
  profile: AdapterProfile;
  /** Whether the outbound concurrency limit applies to this host. */
  limited: boolean;
  /** Concurrency lanes by API key, filled lazily. */
  lanes: Map<string, Lane>;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Readable & { text(): Promise<string>; json(): Promise<unknown> };
}

const ERROR_BODY_LIMIT = 64 * 1024;

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
  private readonly pools = new Map<string, Pool>();
  private readonly chatTargets = new WeakMap<Route, Target>();
  private readonly embeddingTargets = new WeakMap<Route, Target>();

  constructor(private readonly timeouts: UpstreamTimeouts, private readonly siteName?: string, private readonly concurrency?: ConcurrencyLimiter) {}

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connect: { timeout: this.timeouts.connectMs },
        headersTimeout: this.timeouts.firstByteMs,
        bodyTimeout: this.timeouts.idleMs,
        keepAliveTimeout: 30_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  private target(route: Route, surface: 'chat' | 'embeddings'): Target {
    const cache = surface === 'chat' ? this.chatTargets : this.embeddingTargets;
    let target = cache.get(route);
    if (!target) {
      const url = new URL(surface === 'chat' ? chatCompletionsUrl(route.kind, route.baseUrl) : embeddingsUrl(route.baseUrl, route.embeddingsPath));
      target = {
        origin: url.origin, path: `${url.pathname}${url.search}`, keys: new KeyPool(route.apiKeys), profile: resolveAdapterKind(route.kind),
        limited: this.concurrency?.applies(url.hostname) ?? false, lanes: new Map(),
      };
      cache.set(route, target);
    }
    return target;
  }

  /**
   * POSTs a JSON body. Resolves with a 2xx response whose body is still unread; rejects with an
   * {@link UpstreamError} for transport failures and non-2xx answers (their body read, bounded).
   */
  async post(route: Route, surface: 'chat' | 'embeddings', body: string, signal: ClientAbort, admission?: Admission): Promise<UpstreamResponse> {
    const target = this.target(route, surface);
    if (!target.limited || !this.concurrency) {
      admission?.admitted?.();
      return this.send(target, target.keys.next(), body, signal, undefined);
    }
    const { key, lane } = await this.permit(route, target, admission?.acquireTimeoutMs);
    admission?.admitted?.();
    return this.send(target, key, body, signal, lane);
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

  private async send(target: Target, key: string | undefined, body: string, signal: ClientAbort, lane: Lane | undefined): Promise<UpstreamResponse> {
    const headers = upstreamHeaders(key, target.profile, this.siteName ? { siteName: this.siteName } : {});
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool(target.origin).request({ method: 'POST', path: target.path, headers, body, signal });
    } catch (err) {
      if (lane) this.concurrency!.release(lane, 'other');
      if (signal.aborted) throw err;
      throw transportError(err, 'headers');
    }
    if (response.statusCode >= 200 && response.statusCode < 300) {
      // The permit is held until the body is done (a stream holds it to its end).
      if (lane) response.body.once('close', () => this.concurrency!.release(lane, 'ok'));
      return response;
    }
    const text = await readBounded(response.body, ERROR_BODY_LIMIT).catch(() => '');
    const header = response.headers['retry-after'];
    const retryAfter = Array.isArray(header) ? header[0] : header;
    if (lane) {
      const limited = response.statusCode === 429;
      this.concurrency!.release(lane, limited ? 'rate_limited' : 'other', limited ? retryAfter : undefined);
    }
    throw httpError(response.statusCode, text, retryAfter);
  }

  /**
   * {@link post}, then the whole body parsed as JSON. A body that breaks off or is not JSON is a
   * retryable {@link UpstreamError} (nothing has reached the client yet).
   */
  async postJson<T>(route: Route, surface: 'chat' | 'embeddings', body: string, signal: ClientAbort, admission?: Admission): Promise<T> {
    const response = await this.post(route, surface, body, signal, admission);
    let text: string;
    try {
      text = await response.body.text();
    } catch (err) {
      if (signal.aborted) throw err;
      throw new UpstreamError(`upstream response failed: ${(err as Error).message}`, 'stream', 502, true, { cause: err });
    }
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new UpstreamError(`upstream returned a ${surface} body that is not JSON`, 'http', 502, true, { cause: err });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

/** Reads at most `limit` bytes of a body as text and discards the rest. */
export async function readBounded(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size < limit) {
      chunks.push(chunk.subarray(0, limit - size));
      size += Math.min(chunk.length, limit - size);
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

export { UpstreamError };
