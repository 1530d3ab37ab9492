/**
 * What went wrong calling an upstream, classified for the fallback driver: whether another route
 * may help (connect error, timeout, 5xx, 429), whether the prompt was too long for the route's
 * context window, and the status the client sees if this error is the one surfaced.
 */
import type { Route } from '../registry';

export type UpstreamFailure = 'connect' | 'timeout' | 'http' | 'stream' | 'concurrency';

export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly failure: UpstreamFailure,
    /** Status the client sees when this error is surfaced (upstream status, 502 or 504). */
    readonly status: number,
    /** True when trying another route may help. */
    readonly retryable: boolean,
    readonly options: { contextLength?: boolean; retryAfter?: string; upstreamStatus?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UpstreamError';
  }
}

/** An attempt on one route, as recorded for logs and `_routing.failed_attempts`. */
export interface FailedAttempt {
  endpoint_id: string;
  provider: string;
  status: number;
  failure: UpstreamFailure;
  message: string;
  /** The upstream's own HTTP status, when it answered one (`status` is what a client would get). */
  upstream_status?: number;
}

export function failedAttempt(route: Route, err: UpstreamError): FailedAttempt {
  const attempt: FailedAttempt = { endpoint_id: route.endpointId, provider: route.providerLabel, status: err.status, failure: err.failure, message: err.message.slice(0, 300) };
  if (err.options.upstreamStatus !== undefined) attempt.upstream_status = err.options.upstreamStatus;
  return attempt;
}

/** Phrases engines use when a prompt exceeds the context window. */
const CONTEXT_LENGTH = /maximum context length|context length|context window|too many tokens|prompt is too long|reduce the length/i;

/** Classifies a non-2xx upstream answer. `bodyText` is the (bounded) error body. */
export function httpError(status: number, bodyText: string, retryAfter: string | undefined): UpstreamError {
  const message = upstreamMessage(bodyText) ?? `upstream answered ${status}`;
  const contextLength = (status === 400 || status === 413 || status === 422) && CONTEXT_LENGTH.test(message);
  const retryable = status === 429 || status >= 500;
  const surfaced = status === 401 || status === 429 || (status >= 400 && status < 500) ? status : 502;
  return new UpstreamError(message, 'http', surfaced, retryable || contextLength, {
    contextLength, upstreamStatus: status, ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}

function upstreamMessage(bodyText: string): string | undefined {
  if (!bodyText) return undefined;
  try {
    const parsed = JSON.parse(bodyText) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const candidate = typeof parsed.error === 'object' ? parsed.error?.message : parsed.error ?? parsed.message ?? parsed.detail;
    if (typeof candidate === 'string') return candidate.slice(0, 1000);
  } catch {
    // not JSON: fall through to the raw text
  }
  return bodyText.slice(0, 1000);
}

/** Classifies a transport error from undici. */
export function transportError(err: unknown, phase: 'connect' | 'headers' | 'body'): UpstreamError {
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message ?? String(err);
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamError(`upstream timed out (${code})`, 'timeout', 504, phase !== 'body', { cause: err });
  }
  if (phase === 'body') return new UpstreamError(`upstream stream failed: ${message}`, 'stream', 502, false, { cause: err });
  return new UpstreamError(`upstream connection failed: ${code || message}`, 'connect', 502, true, { cause: err });
}
