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
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Readable & { text(): Promise<string>; json(): Promise<unknown> };
}

const ERROR_BODY_LIMIT = 64 * 1024;

export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();
  private readonly chatTargets = new WeakMap<Route, Target>();
  private readonly embeddingTargets = new WeakMap<Route, Target>();

  constructor(private readonly timeouts: UpstreamTimeouts, private readonly siteName?: string) {}

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
      target = { origin: url.origin, path: `${url.pathname}${url.search}`, keys: new KeyPool(route.apiKeys), profile: resolveAdapterKind(route.kind) };
      cache.set(route, target);
    }
    return target;
  }

  /**
   * POSTs a JSON body. Resolves with a 2xx response whose body is still unread; rejects with an
   * {@link UpstreamError} for transport failures and non-2xx answers (their body read, bounded).
   */
  async post(route: Route, surface: 'chat' | 'embeddings', body: string, signal: ClientAbort): Promise<UpstreamResponse> {
    const target = this.target(route, surface);
    const headers = upstreamHeaders(target.keys.next(), target.profile, this.siteName ? { siteName: this.siteName } : {});
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool(target.origin).request({ method: 'POST', path: target.path, headers, body, signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw transportError(err, 'headers');
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    const text = await readBounded(response.body, ERROR_BODY_LIMIT).catch(() => '');
    const retryAfter = response.headers['retry-after'];
    throw httpError(response.statusCode, text, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  }

  /**
   * {@link post}, then the whole body parsed as JSON. A body that breaks off or is not JSON is a
   * retryable {@link UpstreamError} (nothing has reached the client yet).
   */
  async postJson<T>(route: Route, surface: 'chat' | 'embeddings', body: string, signal: ClientAbort): Promise<T> {
    const response = await this.post(route, surface, body, signal);
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
