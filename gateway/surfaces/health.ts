/**
 * `GET /health` and `GET /health/ready` (docs/errors-and-health.md "Gateway health").
 *
 * `/health` is 200 for `healthy` and `degraded`, 503 only when the configured database was
 * unreachable at startup (`reason: database_unavailable_at_startup`). `/health/ready` is strict:
 * 503 unless every configured store answers.
 */
import type Router from '@koa/router';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { DatabaseState } from '../store/database-state';

export type StoreStatus = 'up' | 'down' | 'disabled';

export interface HealthBody {
  status: 'healthy' | 'degraded';
  reason?: 'database_unavailable_at_startup';
  routes_configured: number;
  database_configured: boolean;
  database_connected: boolean;
  stores: {
    operational_store: { status: StoreStatus; backend: 'postgres' | 'memory'; cache: { backend: 'in_process'; refresh_seconds: number } };
    log_store: { status: StoreStatus; backend: 'postgres' | 'none' };
  };
}

export interface HealthDeps {
  database: DatabaseState;
  /** One per model id plus one per alias. */
  routesConfigured: () => number;
  /** Seconds between refreshes of the in-process cache of operational state. */
  cacheRefreshSeconds: number;
}

/** Computes the health body and whether it is a 503. */
export async function healthReport(deps: HealthDeps): Promise<{ httpStatus: number; body: HealthBody; ready: boolean }> {
  const { database } = deps;
  const connected = await database.connected();
  const dbStatus: StoreStatus = database.configured ? (connected ? 'up' : 'down') : 'disabled';
  const body: HealthBody = {
    status: database.configured && !connected ? 'degraded' : 'healthy',
    routes_configured: deps.routesConfigured(),
    database_configured: database.configured,
    database_connected: connected,
    stores: {
      operational_store: {
        status: database.configured ? dbStatus : 'up',
        backend: database.configured ? 'postgres' : 'memory',
        cache: { backend: 'in_process', refresh_seconds: deps.cacheRefreshSeconds },
      },
      log_store: { status: dbStatus, backend: database.configured ? 'postgres' : 'none' },
    },
  };
  let httpStatus = 200;
  if (database.unavailableAtStartup && !connected) {
    body.reason = 'database_unavailable_at_startup';
    httpStatus = 503;
  }
  const ready = Object.values(body.stores).every((s) => s.status !== 'down');
  return { httpStatus, body, ready };
}

/** Router with the two health endpoints. */
export function healthRouter(deps: HealthDeps): Router {
  const router = createRouter();
  const open = publicAccess();
  router.get('/health', open, async (ctx) => {
    const report = await healthReport(deps);
    ctx.status = report.httpStatus;
    ctx.body = report.body;
  });
  router.get('/health/ready', open, async (ctx) => {
    const report = await healthReport(deps);
    ctx.status = report.ready && !deps.database.unavailableAtStartup ? 200 : 503;
    ctx.body = { ready: ctx.status === 200, stores: report.body.stores };
  });
  documentRoute(router, 'GET', '/health', { statuses: [503], summary: 'Liveness and stores (200 healthy or degraded; 503 when the configured database was unavailable at startup).' });
  documentRoute(router, 'GET', '/health/ready', { statuses: [503], summary: 'Readiness: 503 unless every configured store is up.' });
  return router;
}
