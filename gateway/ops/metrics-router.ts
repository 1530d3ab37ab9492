/**
 * `GET /metrics` (docs/metrics.md): the gateway's metrics in the Prometheus text format. Access
 * kind `metrics`: `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time), or an
 * administrator of the gateway (`ADMIN_TOKEN`, or an administrator's access token); otherwise 401
 * (403 for a credential that is known but not an administrator's, as on the admin API). The
 * `METRICS_TOKEN` and `ADMIN_TOKEN` checks read no database, so a scrape with them answers
 * during a PostgreSQL outage; an access token needs its account read (as every admin request does).
 */
import type Router from '@koa/router';
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { presentsMetricsToken } from '../../lib/identity/metrics-token';
import { authenticateAdmin, type AdminGuardDeps } from '../admin/guard';
import type { GatewayDeps } from '../deps';
import type { GatewayState } from '../surfaces/state';

/** The guard of `GET /metrics`: the metrics token, else an administrator. */
export function metricsAccess(metricsToken: string | undefined, admin: AdminGuardDeps): AccessGuard<GatewayState> {
  return accessGuard<GatewayState>('metrics', async (ctx) => {
    if (!ctx.state.client) throw new AppError('internal', 'metrics request without a resolved client');
    admin.gate.refuseBlocked(ctx.state.client, undefined);
    const authorization = ctx.get('authorization') || undefined;
    if (presentsMetricsToken(authorization, metricsToken)) return;
    if (!bearerToken(authorization)) throw new AppError('unauthorized', 'Metrics credentials required (Authorization: Bearer <METRICS_TOKEN, ADMIN_TOKEN or administrator access token>)');
    ctx.state.admin = await authenticateAdmin(admin, authorization, ctx.state.client, ctx.path);
  });
}

export function metricsRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const guard = metricsAccess(deps.settings.METRICS_TOKEN, {
    adminToken: deps.settings.ADMIN_TOKEN, tokens: deps.tokens, db: deps.database.db, gate: deps.gate, keys: deps.keys,
  });
  router.get('/metrics', guard, async (ctx) => {
    const { contentType, body } = await deps.metrics.scrape();
    ctx.set('Content-Type', contentType);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  });
  documentRoute(router, 'GET', '/metrics', { produces: 'text/plain; version=0.0.4; charset=utf-8', summary: 'Prometheus metrics of the gateway (docs/metrics.md).' });
  return router;
}
