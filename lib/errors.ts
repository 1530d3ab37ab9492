/**
 * Application errors: a string-literal code, mapped to an HTTP status by one exhaustive switch.
 * `expose` says whether the message may reach the client; unexposed errors render a generic text.
 */

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'model_not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'precondition_failed'
  | 'rate_limited'
  | 'internal'
  | 'database_not_configured'
  | 'not_implemented'
  | 'upstream_error'
  | 'service_unavailable'
  | 'no_provider_available'
  | 'gateway_timeout';

/** The HTTP status of each error code. */
export function statusOf(code: ErrorCode): number {
  switch (code) {
    case 'invalid_request': return 400;
    case 'unauthorized': return 401;
    case 'forbidden': return 403;
    case 'not_found':
    case 'model_not_found': return 404;
    case 'conflict': return 409;
    case 'precondition_failed': return 412;
    case 'payload_too_large': return 413;
    case 'rate_limited': return 429;
    case 'internal':
    case 'database_not_configured': return 500;
    case 'not_implemented': return 501;
    case 'upstream_error': return 502;
    case 'service_unavailable':
    case 'no_provider_available': return 503;
    case 'gateway_timeout': return 504;
  }
}

/** The OpenAI-style `error.type` for a status. */
export function errorTypeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export interface AppErrorOptions {
  /** Overrides the status of the code (e.g. an upstream 401 surfaced as-is). */
  status?: number;
  /** Whether the message may be shown to the client. Default: true below 500, false from 500. */
  expose?: boolean;
  cause?: unknown;
  /** The field or parameter at fault, for 400s. */
  param?: string;
  /** Extra response headers (e.g. `Retry-After`). */
  headers?: Record<string, string>;
}

/** Server-side codes whose message is written for clients (their texts are part of the documented API, docs/errors-and-health.md). */
const exposedServerCodes: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'database_not_configured', 'not_implemented', 'service_unavailable', 'no_provider_available', 'gateway_timeout', 'upstream_error',
]);

/** An error the HTTP layer renders with its status and, when exposed, its message. */
export class AppError extends Error {
  readonly status: number;
  readonly expose: boolean;
  readonly param: string | undefined;
  readonly headers: Record<string, string>;

  constructor(readonly code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.status = options.status ?? statusOf(code);
    this.expose = options.expose ?? (this.status < 500 || exposedServerCodes.has(code));
    this.param = options.param;
    this.headers = options.headers ?? {};
  }
}

/** Whether a value is an {@link AppError}. */
export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
