/**
 * Builds the gateway's Koa application from its dependencies. No globals: `main.ts` and the
 * tests construct the dependencies and pass them in.
 */
import Koa from 'koa';
import type { Logger } from '../lib/logger';
import { errorMiddleware } from '../lib/http/error-middleware';
import { requestContext, type RequestState } from '../lib/http/request-context';
import { healthRouter } from './surfaces/health';
import type { DatabaseState } from './store/database-state';

export interface GatewayDeps {
  log: Logger;
  database: DatabaseState;
  /** Number of public model ids plus aliases currently registered. */
  routesConfigured: () => number;
  cacheRefreshSeconds?: number;
}

/** Creates the gateway app. */
export function createGatewayApp(deps: GatewayDeps): Koa<RequestState> {
  const app = new Koa<RequestState>({ proxy: false });
  app.silent = true;
  app.on('error', (err: unknown) => deps.log.warn({ err }, 'unhandled koa error'));
  app.use(requestContext(deps.log));
  app.use(errorMiddleware());
  const health = healthRouter({
    database: deps.database,
    routesConfigured: deps.routesConfigured,
    cacheRefreshSeconds: deps.cacheRefreshSeconds ?? 5,
  });
  app.use(health.routes());
  app.use(health.allowedMethods());
  return app;
}
