/**
 * `GET /metrics` of the control-plane API: the Prometheus text exposition of its own registry
 * (api/metrics/api-metrics.ts, docs/metrics.md). Access `metrics`: `Authorization: Bearer
 * <METRICS_TOKEN>` (compared in constant time), or an operator credential (`ADMIN_TOKEN` or an
 * account with `agent.admin`); otherwise 401 (403 for a valid credential without the right).
 */
import type Router from '@koa/router';
import { accessGuard, createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { presentsMetricsToken } from '../../lib/identity/metrics-token';
import { AppError } from '../../lib/errors';
import type { ApiDeps } from '../deps';
import { authenticateOperator, type AgentState } from '../auth/principals';
import { apiMetricsOf } from '../process-services';

const EXPOSITION = 'text/plain; version=0.0.4; charset=utf-8';

function metricsAccess(deps: ApiDeps): AccessGuard<AgentState> {
  const principals = { db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN };
  return accessGuard<AgentState>('metrics', async (ctx) => {
    const authorization = ctx.get('authorization') || undefined;
    if (presentsMetricsToken(authorization, deps.settings.METRICS_TOKEN)) return;
    if (authorization === undefined) throw new AppError('unauthorized', 'Metrics need Authorization: Bearer <METRICS_TOKEN> or an operator credential');
    ctx.state.operator = await authenticateOperator(principals, authorization);
  });
}

export function metricsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const metrics = apiMetricsOf(deps);
  router.get('/metrics', metricsAccess(deps), async (ctx) => {
    ctx.type = EXPOSITION;
    ctx.body = await metrics.render();
  });
  documentRoute(router, 'GET', '/metrics', { produces: EXPOSITION, summary: 'Prometheus metrics of the control-plane API (docs/metrics.md).' });
  return router;
}
