/**
 * The inference POST routes, dispatched by one map lookup before the router (the hot path;
 * `@koa/router` matching measured at several microseconds per request). A known path with another
 * method answers 405 with `Allow`.
 */
import type { Middleware } from 'koa';
import { AppError } from '../../lib/errors';
import { chatHandler } from './chat';
import { completionsHandler } from './completions';
import { embeddingsHandler } from './embeddings';
import { responsesHandler } from './responses';
import type { GatewayContextDeps, GatewayState, InferenceHandler } from './state';

export function inferenceRoutes(deps: GatewayContextDeps): Middleware<GatewayState> {
  const routes = new Map<string, InferenceHandler>([
    ['/v1/chat/completions', chatHandler(deps)],
    ['/v1/completions', completionsHandler(deps)],
    ['/v1/responses', responsesHandler(deps)],
    ['/v1/embeddings', embeddingsHandler(deps)],
  ]);
  return (ctx, next) => {
    const handler = routes.get(ctx.path);
    if (!handler) return next();
    if (ctx.method !== 'POST') {
      throw new AppError('invalid_request', `Method ${ctx.method} is not allowed on ${ctx.path}; use POST`, { status: 405, headers: { Allow: 'POST' } });
    }
    return handler(ctx);
  };
}
