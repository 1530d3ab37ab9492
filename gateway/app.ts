/**
 * Builds the gateway's Koa application from its dependencies. No globals: `main.ts` and the
 * tests construct the dependencies and pass them in.
 */
import Koa from 'koa';
import type { Logger } from '../lib/logger';
import { errorMiddleware } from '../lib/http/error-middleware';
import { requestContext } from '../lib/http/request-context';
import { describeRequest } from './auth/request-origin';
import { healthRouter } from './surfaces/health';
import type { DatabaseState } from './store/database-state';
import { modelsRouter } from './surfaces/models';
import type { GatewayContextDeps, GatewayState } from './surfaces/state';

export interface GatewayDeps extends GatewayContextDeps {
  log: Logger;
  database: DatabaseState;
  cacheRefreshSeconds?: number;
}

/** Creates the gateway app. */
export function createGatewayApp(deps: GatewayDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;
  app.on('error', (err: unknown) => deps.log.warn({ err }, 'unhandled koa error'));
  app.use(requestContext(deps.log, (req) => describeRequest(deps.clientAddress, deps.log, req).fields));
  app.use(errorMiddleware());
  const health = healthRouter({
    database: deps.database,
    routesConfigured: () => deps.registry.current.routesConfigured,
    cacheRefreshSeconds: deps.cacheRefreshSeconds ?? 5,
  });
  for (const router of [health, modelsRouter(deps)]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
