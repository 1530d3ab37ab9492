/**
 * The one place errors become HTTP responses: `{ error: { message, type, code, param } }`
 * (OpenAI-shaped). Unexposed errors show a generic message and are logged with their cause.
 * Once headers are sent (a stream started) nothing is re-rendered: the stream's owner writes
 * its own error event, and this middleware only makes sure the response ends.
 */
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';
import { writeJson } from './json-response';
import { AppError, errorTypeOf, isAppError, type ErrorCode } from '../errors';
import type { RequestState } from './request-context';
import { cleanText } from '../text';
import { isDatabaseUnavailable } from '../db';

export interface ErrorBody {
  error: { message: string; type: string; code: ErrorCode; param: string | null };
}

/** Builds the error body for a status and message. */
export function errorBody(status: number, code: ErrorCode, message: string, param?: string): ErrorBody {
  return { error: { message, type: errorTypeOf(status), code, param: param ?? null } };
}

/** Normalizes anything thrown by a handler or by Koa itself into an {@link AppError}. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; message?: unknown; type?: unknown };
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status === 413 || e?.type === 'entity.too.large') {
    return new AppError('payload_too_large', 'Request body is too large', { cause: err });
  }
  if (status >= 400 && status < 500 && e?.expose === true && typeof e.message === 'string') {
    return new AppError(status === 404 ? 'not_found' : 'invalid_request', e.message, { status, cause: err });
  }
  if (isDatabaseUnavailable(err)) {
    // An outage, not a fault of this request: the caller can retry, and the cause is in the log.
    return new AppError('service_unavailable', 'The database is not answering right now; the request was not completed. Try again shortly', { cause: err });
  }
  return new AppError('internal', 'Internal server error', { cause: err, expose: false });
}

/** What to send for an error, or `undefined` when nothing can be sent (client gone, stream started). */
export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/**
 * Logs an error thrown while handling a request and decides the response. A client that went
 * away is logged at debug; unexpected faults (`internal`) at error with the cause; expected
 * server-side answers (upstream failures, timeouts, no provider) at warn; client errors at debug.
 */
export function handleError(thrown: unknown, res: ServerResponse, log: Logger): ErrorResponse | undefined {
  if (res.destroyed && !res.writableFinished) {
    // The client went away; whatever failed below it is a consequence, not a server error.
    log.debug({ err: (thrown as Error)?.message }, 'client closed the connection before the response');
    return undefined;
  }
  const err = toAppError(thrown);
  if (err.code === 'internal') log.error({ err: thrown, code: err.code }, err.message);
  // Client errors may quote the client's text (a model name, a path): logged cleaned (docs/security.md).
  else if (err.status >= 500) log.warn({ code: err.code, status: err.status }, cleanText(err.message));
  else log.debug({ code: err.code, status: err.status }, cleanText(err.message));
  if (res.headersSent || !res.writable) {
    if (!res.writableEnded) res.end();
    return undefined;
  }
  return { status: err.status, headers: err.headers, body: errorBody(err.status, err.code, err.expose ? err.message : 'Internal server error', err.param) };
}

/** Re-shapes the error body for a surface with its own error format (e.g. the messages surface). */
export type ErrorBodyShape = (status: number, body: ErrorBody) => unknown;

/** Writes an error response straight to a Node response (outside Koa), in `shape` when given. */
export function sendError(thrown: unknown, res: ServerResponse, log: Logger, shape?: ErrorBodyShape): void {
  const response = handleError(thrown, res, log);
  if (response) writeJson(res, response.status, shape ? shape(response.status, response.body) : response.body, response.headers);
}

/** Renders errors thrown below it, and 404s for unmatched routes. */
export function errorMiddleware(): Middleware<RequestState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError('not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
    } catch (thrown) {
      const response = handleError(thrown, ctx.res, ctx.state.log);
      if (!response) return;
      ctx.status = response.status;
      for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
      ctx.body = response.body;
    }
  };
}
