/**
 * Per-request context: a request id (the client's `X-Request-Id` when it is safe, else a new
 * one), echoed in the response, and one `http_request` log line when the response finishes.
 */
import { randomUUID } from 'node:crypto';
import type { Middleware, ParameterizedContext } from 'koa';
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
class LazyRequestState implements RequestState {
  private child: Logger | undefined;
  constructor(readonly requestId: string, private readonly root: Logger) {}
  get log(): Logger {
    return (this.child ??= this.root.child({ request_id: this.requestId }));
  }
}

/** Installs `ctx.state.requestId` and a lazily created `ctx.state.log`, and logs each response. */
export function requestContext(root: Logger): Middleware<RequestState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const requestId = requestIdFrom(ctx.req.headers['x-request-id']);
    ctx.state = new LazyRequestState(requestId, root);
    ctx.res.setHeader('X-Request-Id', requestId);
    ctx.res.once('close', () => logResponse(ctx, root, requestId, started));
    await next();
  };
}

function logResponse(ctx: ParameterizedContext<RequestState>, root: Logger, requestId: string, started: bigint): void {
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
  root.info({
    event: 'http_request',
    request_id: requestId,
    method: ctx.method,
    path: ctx.path,
    status: ctx.res.statusCode,
    duration_ms: Math.round(durationMs * 1000) / 1000,
    completed: ctx.res.writableFinished,
  }, 'http_request');
}
