/**
 * Builds the control-plane API's Koa application from its dependencies.
 */
import Koa from 'koa';
import type { Db } from '../lib/db';
import type { Logger } from '../lib/logger';
import { errorMiddleware } from '../lib/http/error-middleware';
import { requestContext, type RequestState } from '../lib/http/request-context';
import { apiHealthRouter } from './routes/health';
import { hostsRouter } from './routes/hosts';

export interface ApiDeps {
  log: Logger;
  db: Db;
  temporalReachable: (timeoutMs: number) => Promise<boolean>;
}

export function createApiApp(deps: ApiDeps): Koa<RequestState> {
  const app = new Koa<RequestState>({ proxy: false });
  app.silent = true;
  app.on('error', (err: unknown) => deps.log.warn({ err }, 'unhandled koa error'));
  app.use(requestContext(deps.log));
  app.use(errorMiddleware());
  for (const router of [apiHealthRouter(deps), hostsRouter(deps.db)]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
