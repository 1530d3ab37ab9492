/**
 * Per-request context: a request id (the client's `X-Request-Id` when it is safe, else a new
 * one), echoed in the response, and one `http_request` log line when the response finishes.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import { infoSoon, type Logger } from '../logger';
import { cleanText } from '../text';

export interface RequestState {
  requestId: string;
  /** Request-scoped logger (child of the root with `request_id`); created on first use. */
  readonly log: Logger;
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Chooses the request id: the client's value when it is 1-128 of `A-Za-z0-9._:-` (so it passes the
 * text rule and is safe in logs, headers and PostgreSQL), else a new UUID.
 */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && SAFE_REQUEST_ID.test(header) ? header : randomUUID();
}

/** Request state with a logger created on first use (most requests never log on their own). */
export class LazyRequestState implements RequestState {
  private child: Logger | undefined;
  constructor(readonly requestId: string, private readonly root: Logger) {}
  get log(): Logger {
    return (this.child ??= this.root.child({ request_id: this.requestId }));
  }
}

/** Header values longer than this are cut in the DEBUG `http_request_headers` line (docs/client-address.md). */
const HEADER_LOG_LIMIT = 256;
const MASKED_HEADERS: ReadonlySet<string> = new Set(['authorization', 'x-api-key', 'cookie']);

/** Every request header, values cut to 256 characters and cleaned (lib/text.ts), credentials replaced by `***`. */
export function loggableHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = MASKED_HEADERS.has(name) ? '***' : cleanText(raw[i + 1]!.slice(0, HEADER_LOG_LIMIT));
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}

/**
 * Starts tracking one request outside any framework: picks the request id, echoes it in
 * `X-Request-Id`, and writes the `http_request` line when the response closes (deferred to the end of
 * the loop turn with the other requests' lines, stamped with the closing time), with the extra
 * fields `fields()` gives (called only when the line is written). At DEBUG also an
 * `http_request_headers` line.
 */
export function beginRequest(req: IncomingMessage, res: ServerResponse, root: Logger, path: string, fields?: () => Record<string, unknown>): LazyRequestState {
  return trackRequest(new LazyRequestState(requestIdFrom(req.headers['x-request-id']), root), req, res, root, path, fields);
}

/**
 * {@link beginRequest} with a state the caller built (its id from {@link requestIdFrom}): the
 * gateway's inference requests use their request record as their state.
 */
export function trackRequest<S extends RequestState>(state: S, req: IncomingMessage, res: ServerResponse, root: Logger, path: string, fields?: () => Record<string, unknown>): S {
  const started = process.hrtime.bigint();
  res.setHeader('X-Request-Id', state.requestId);
  if (root.isLevelEnabled('debug')) {
    root.debug({ event: 'http_request_headers', request_id: state.requestId, headers: loggableHeaders(req) }, 'http_request_headers');
  }
  res.once('close', () => {
    if (!root.isLevelEnabled('info')) return;
    infoSoon(root, {
      event: 'http_request',
      request_id: state.requestId,
      method: req.method,
      path,
      ...fields?.(),
      status: res.statusCode,
      duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1000) / 1000,
      completed: res.writableFinished,
    }, 'http_request');
  });
  return state;
}

/**
 * Koa middleware: `ctx.state` becomes the request's state (id, lazy logger), and each response is
 * logged with the fields `describe` gives for the request.
 */
export function requestContext(root: Logger, describe?: (req: IncomingMessage) => () => Record<string, unknown>): Middleware<RequestState> {
  return async (ctx, next) => {
    ctx.state = beginRequest(ctx.req, ctx.res, root, ctx.path, describe?.(ctx.req));
    await next();
  };
}
