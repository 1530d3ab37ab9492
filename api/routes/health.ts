/**
 * `GET /health` of the control-plane API: `healthy` when PostgreSQL and Temporal answer,
 * `degraded` (still 200) otherwise, with each dependency's state.
 */
import type Router from '@koa/router';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { Db } from '../../lib/db';
import { pingDb } from '../../lib/db';
import type { RequestState } from '../../lib/http/request-context';

export interface ApiHealthDeps {
  db: Db;
  /** Resolves true when the Temporal frontend answers within the timeout. */
  temporalReachable: (timeoutMs: number) => Promise<boolean>;
}

export function apiHealthRouter(deps: ApiHealthDeps): Router<RequestState> {
  const router = createRouter<RequestState>();
  const open = publicAccess<RequestState>();
  router.get('/health', open, async (ctx) => {
    const [database, temporal] = await Promise.all([pingDb(deps.db, 1000), deps.temporalReachable(1000)]);
    ctx.body = { status: database && temporal ? 'healthy' : 'degraded', database_connected: database, temporal_connected: temporal };
  });
  documentRoute(router, 'GET', '/health', { summary: 'PostgreSQL and Temporal reachability (200 healthy or degraded).' });
  return router;
}
