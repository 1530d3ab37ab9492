/**
 * Retargeting a registry (file) route (docs/runtime-config.md): point it at another upstream, kind,
 * model name or label while it keeps its `endpoint_id` and route id (breaker state, latency
 * history, weight overrides and an offload policy naming it all follow). Stored in
 * `provider_route_configs`; DELETE returns the route to its file definition. The verification tries
 * it without saving.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import type { GatewayDeps } from '../deps';
import type { Route } from '../registry/types';
import { retargetRoute } from '../runtime-config/overlay';
import { probeUpstream } from '../runtime-config/probe';
import { keyFingerprint } from '../runtime-config/secrets';
import type { RouteConfigRow } from '../runtime-config/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, invalid, modelOr404, routeOr404, adminRoute } from './http';
import { routeView } from './views';

const retargetBody = z.object({
  kind: z.string().trim().min(1).optional(),
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  provider_model_id: z.string().trim().min(1).optional(),
  provider: z.string().trim().min(1).max(64).optional(),
  /** Write-only; an empty string keeps the saved key. */
  api_key: z.string().optional(),
}).strict();

/** The file route of `route_id` (404 when unknown; 400 for a runtime route, which PATCH changes). */
function fileRoute(deps: GatewayDeps, modelId: string, routeId: string): Route {
  const model = modelOr404(deps, modelId);
  routeOr404(model, routeId);
  const base = deps.runtimeConfig.base.byName.get(modelId)?.routes.find((r) => r.routeId === routeId);
  if (!base) throw invalid('route_id', `${routeId} is a runtime route; change it with PATCH /admin/routing/provider-route-candidates/${modelId}/{route_id}`);
  return base;
}

/** Validates a retarget body against the file route; returns the stored row and the route it gives. */
function prepare(deps: GatewayDeps, base: Route, modelId: string, body: z.infer<typeof retargetBody>): { row: RouteConfigRow; route: Route } {
  const previous = deps.runtimeConfig.state.routeConfigs.find((c) => c.route_id === base.routeId);
  const { api_key: key, ...config } = body;
  const apiKey = key ? key : previous?.api_key ?? null;
  const row: RouteConfigRow = { model_id: modelId, route_id: base.routeId, config, api_key: apiKey, api_key_fingerprint: apiKey ? keyFingerprint(apiKey) : null };
  const route = retargetRoute(base, row, deps.runtimeConfig.effective.providers);
  if ('field' in route) throw invalid(route.field, route.message);
  return { row, route };
}

export function retargetRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  const path = '/admin/routing/provider-routes/:model_id/:route_id';
  router.put(path, admin, async (ctx) => {
    const { model_id: modelId, route_id: routeId } = ctx.params as { model_id: string; route_id: string };
    const base = fileRoute(deps, modelId, routeId);
    const body = await adminBody(ctx, retargetBody);
    if (Object.keys(body).length === 0) throw invalid('body', 'name at least one of kind, base_url, provider_model_id, provider, api_key');
    const { row } = prepare(deps, base, modelId, body);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_route_configs')
      .insert({ ...row, config: JSON.stringify(row.config), updated_at: trx.fn.now() })
      .onConflict(['model_id', 'route_id']).merge(['config', 'api_key', 'api_key_fingerprint', 'updated_at']));
    const model = modelOr404(deps, modelId);
    ctx.body = routeView(model, routeOr404(model, routeId), deps.runtimeConfig.effective);
  });
  router.post('/admin/routing/provider-route-verifications/:model_id/:route_id', admin, async (ctx) => {
    const { model_id: modelId, route_id: routeId } = ctx.params as { model_id: string; route_id: string };
    const base = fileRoute(deps, modelId, routeId);
    const { route } = prepare(deps, base, modelId, await adminBody(ctx, retargetBody));
    ctx.body = { model_id: modelId, route_id: routeId, saved: false, ...(await probeUpstream({ kind: route.kind, baseUrl: route.baseUrl, apiKey: route.apiKeys[0], providerModelId: route.providerModelId, upstreamApi: route.upstreamApi })) };
  });
  documentRoute(router, 'PUT', path, { body: retargetBody, summary: "Retargets a file route (provider, model, key)." });
  documentRoute(router, 'POST', '/admin/routing/provider-route-verifications/:model_id/:route_id', { body: retargetBody, summary: 'Probes a retarget without saving it.' });
  router.delete(path, admin, async (ctx) => {
    const { model_id: modelId, route_id: routeId } = ctx.params as { model_id: string; route_id: string };
    fileRoute(deps, modelId, routeId);
    if (!deps.runtimeConfig.state.routeConfigs.some((c) => c.model_id === modelId && c.route_id === routeId)) {
      throw new AppError('not_found', `Route ${routeId} has no retarget override`, { param: 'route_id' });
    }
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_route_configs').where({ model_id: modelId, route_id: routeId }).delete());
    const model = modelOr404(deps, modelId);
    ctx.body = { ...routeView(model, routeOr404(model, routeId), deps.runtimeConfig.effective), removed: true };
  });
  return router;
}
