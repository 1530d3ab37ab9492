/**
 * Admin routing views and switches (docs/runtime-config.md): the route listing (`/admin/routing`,
 * `/admin/routing/provider-routes[/{model_id}]`, every route tagged `source`), weight overrides
 * per (model, endpoint), and the strategy switch. Changes are stored, then applied at once in
 * this process and within seconds in the others.
 */
import type Router from '@koa/router';
import { createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import type { GatewayDeps } from '../deps';
import { AVAILABLE_STRATEGIES, STRATEGIES } from '../registry';
import { SETTING } from '../runtime-config/types';
import { writeSetting } from '../runtime-config/store';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, invalid, modelOr404, adminRoute } from './http';
import { modelView, routeView } from './views';

const weightBody = z.object({ weight: z.number().finite().min(0) }).strict();
const strategyBody = z.object({ router: z.string().min(1).nullable() }).strict();

function weightView(deps: GatewayDeps, modelId: string, endpointId: string): Record<string, unknown> {
  const effective = deps.runtimeConfig.effective;
  const model = modelOr404(deps, modelId);
  const route = model.routes.find((r) => r.endpointId === endpointId);
  if (!route) throw new AppError('not_found', `Model '${modelId}' has no endpoint '${endpointId}'`, { param: 'endpoint_id' });
  const info = effective.routes.get(route.routeId);
  return {
    model_id: modelId, endpoint_id: endpointId, route_id: route.routeId, source: info?.source ?? 'yaml',
    yaml_weight: info?.configuredWeight ?? route.weight, override: info?.overrideWeight ?? null, effective: route.weight,
    reasons: info?.reasons ?? [],
  };
}

function listingRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.get('/admin/routing', admin, (ctx) => {
    const effective = deps.runtimeConfig.effective;
    const state = deps.runtimeConfig.state;
    ctx.body = {
      revision: effective.revision,
      models: effective.registry.models.map((m) => modelView(m, effective)),
      disabled_providers: state.disabledProviders.map((d) => ({ provider: d.provider, reason: d.reason })),
      unapplied_runtime_routes: state.candidates.filter((c) => !effective.routes.has(`${c.model_id}#c${c.id}`)).map((c) => ({
        candidate_id: c.id, model_id: c.model_id, route_id: `${c.model_id}#c${c.id}`, kind: c.kind, provider: c.provider, base_url: c.base_url,
      })),
      custom_providers: [...effective.providers.keys()],
    };
  });
  router.get('/admin/routing/provider-routes', admin, (ctx) => {
    const effective = deps.runtimeConfig.effective;
    ctx.body = { routes: effective.registry.models.flatMap((m) => m.routes.map((r) => routeView(m, r, effective))) };
  });
  router.get('/admin/routing/provider-routes/:model_id', admin, (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    ctx.body = { model_id: model.id, routes: model.routes.map((r) => routeView(model, r, deps.runtimeConfig.effective)) };
  });
}

function weightRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  const path = '/admin/routing/weights/:model_id/:endpoint_id';
  router.get(path, admin, (ctx) => {
    ctx.body = weightView(deps, ctx.params.model_id!, ctx.params.endpoint_id!);
  });
  router.put(path, admin, async (ctx) => {
    const { model_id: modelId, endpoint_id: endpointId } = ctx.params as { model_id: string; endpoint_id: string };
    weightView(deps, modelId, endpointId);
    const { weight } = await adminBody(ctx, weightBody);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_weight_overrides')
      .insert({ model_id: modelId, endpoint_id: endpointId, weight, updated_at: trx.fn.now() })
      .onConflict(['model_id', 'endpoint_id']).merge(['weight', 'updated_at']));
    ctx.body = weightView(deps, modelId, endpointId);
  });
  router.delete(path, admin, async (ctx) => {
    const { model_id: modelId, endpoint_id: endpointId } = ctx.params as { model_id: string; endpoint_id: string };
    weightView(deps, modelId, endpointId);
    const removed = await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_weight_overrides').where({ model_id: modelId, endpoint_id: endpointId }).delete());
    ctx.body = { ...weightView(deps, modelId, endpointId), removed: removed > 0 };
  });
}

/** Validates a strategy name: known, and installed in this gateway. */
export function checkStrategy(router: string): void {
  if (!STRATEGIES.has(router)) throw invalid('router', `unknown strategy '${router}'; known strategies: ${[...STRATEGIES.keys()].join(', ')}`);
  if (!AVAILABLE_STRATEGIES.has(router)) throw invalid('router', `strategy '${router}' (cost-aware) is known but its package is not installed in this gateway`);
}

function strategyRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.patch('/admin/routing/provider-route-strategies/:model_id', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const body = await adminBody(ctx, strategyBody);
    if (body.router !== null) checkStrategy(body.router);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => writeSetting(trx, `${SETTING.router}${model.id}`, body.router));
    const now = modelOr404(deps, model.id);
    ctx.body = { model_id: now.id, router: now.router ?? 'fixed', override: body.router };
  });
}

export function routingRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  documentRoute(router, 'PUT', '/admin/routing/weights/:model_id/:endpoint_id', { body: weightBody, summary: "Overrides a route's weight." });
  documentRoute(router, 'PATCH', '/admin/routing/provider-route-strategies/:model_id', { body: strategyBody, summary: "Sets or clears a model's routing strategy." });
  listingRoutes(router, deps, admin);
  weightRoutes(router, deps, admin);
  strategyRoutes(router, deps, admin);
  return router;
}
