/**
 * Per-request context: a request id (the client's `X-Request-Id` when it is safe, else a new
 * one), echoed in the response, and one `http_request` log line when the response finishes.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';

export interface RequestState {
  requestId: string;
  /** Request-scoped logger (child of the root with `request_id`); created on first use. */
  readonly log: Logger;
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Chooses the request id: a safe client-supplied value or a new UUID. */
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

/**
 * Starts tracking one request outside any framework: picks the request id, echoes it in
 * `X-Request-Id`, and writes the `http_request` line when the response closes.
 */
export function beginRequest(req: IncomingMessage, res: ServerResponse, root: Logger, path: string): LazyRequestState {
  const started = process.hrtime.bigint();
  const state = new LazyRequestState(requestIdFrom(req.headers['x-request-id']), root);
  res.setHeader('X-Request-Id', state.requestId);
  res.once('close', () => {
    root.info({
      event: 'http_request',
      request_id: state.requestId,
      method: req.method,
      path,
      status: res.statusCode,
      duration_ms: Math.round(Number(process.hrtime.bigint() - started) / 1000) / 1000,
      completed: res.writableFinished,
    }, 'http_request');
  });
  return state;
}

/** Koa middleware: `ctx.state` becomes the request's state (id, lazy logger), and each response is logged. */
export function requestContext(root: Logger): Middleware<RequestState> {
  return async (ctx, next) => {
    ctx.state = beginRequest(ctx.req, ctx.res, root, ctx.path);
    await next();
  };
}
