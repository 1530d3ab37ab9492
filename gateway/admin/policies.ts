/**
 * Per-model routing policies stored in `site_settings` (docs/routing.md "Offload",
 * docs/routewise.md): offload routes (`model_offload_route:<model_id>`) and the cost-aware
 * (routewise) strategy settings. Both are validated and stored. Routewise settings feed the
 * strategy of routewise models at once (docs/routewise.md); an offload policy is executed by the
 * chat path while it is in force (`gateway/routing/offload.ts`), and its listing says whether it is
 * (`active`, else `inactive_reason`).
 */
import type Router from '@koa/router';
import { createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import type { GatewayDeps } from '../deps';
import { AVAILABLE_STRATEGIES } from '../registry';
import type { Model } from '../registry/types';
import { offloadRefusal as refusalFor, offloadStatus, routerOf } from '../routing/offload';
import { writeSetting } from '../runtime-config/store';
import { SETTING, type OffloadPolicy } from '../runtime-config/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, invalid, modelOr404, routeOr404, adminRoute } from './http';

const offloadBody = z.object({
  route_id: z.string().min(1),
  wait_seconds: z.number().finite().positive(),
  engine_queue_limit: z.number().int().positive().optional(),
  max_input_tokens: z.number().int().positive().optional(),
}).strict();

const routewiseBody = z.object({
  model_id: z.string().min(1),
  settings: z.object({
    objective: z.enum(['cost', 'latency', 'balanced']).optional(),
    probe_interval_seconds: z.number().finite().positive().optional(),
    max_latency_ms: z.number().int().positive().optional(),
    /** Pool name → limit, overriding the routes' `concurrency: {limit}` / `quota: {limit}`. */
    concurrency_limits: z.record(z.string().min(1), z.number().int().min(0)).optional(),
    quota_limits: z.record(z.string().min(1), z.number().finite().min(0)).optional(),
  }).strict().nullable(),
}).strict();

const ROUTEWISE_MISSING = 'the routewise (cost-aware) strategy is not installed in this gateway; settings are stored only';

/** Why an offload policy cannot be set for `model` (400), if it cannot. */
function offloadRefusal(deps: GatewayDeps, model: Model): string | undefined {
  // A model naming no router is routewise too when ENABLE_ROUTEWISE makes it the default.
  return refusalFor(model, routerOf(model, deps.routewise));
}

function offloadView(deps: GatewayDeps, modelId: string, policy: OffloadPolicy): Record<string, unknown> {
  const found = deps.runtimeConfig.effective.registry.byName.get(modelId);
  const model = found?.id === modelId ? found : undefined;
  const status = offloadStatus(model, policy, model ? routerOf(model, deps.routewise) : 'fixed');
  return {
    model_id: modelId, route_id: policy.route_id, wait_seconds: policy.wait_seconds,
    engine_queue_limit: policy.engine_queue_limit ?? null, max_input_tokens: policy.max_input_tokens ?? null,
    active: status.active, inactive_reason: status.active ? null : status.reason,
  };
}

function offloadRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.get('/admin/routing/offload-routes', admin, (ctx) => {
    const stored = [...deps.runtimeConfig.state.settings].filter(([key]) => key.startsWith(SETTING.offload));
    ctx.body = { offload_routes: stored.map(([key, value]) => offloadView(deps, key.slice(SETTING.offload.length), value as OffloadPolicy)) };
  });
  router.put('/admin/routing/offload-routes/:model_id', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const body = await adminBody(ctx, offloadBody);
    const refusal = offloadRefusal(deps, model);
    if (refusal) throw new AppError('invalid_request', refusal, { param: 'model_id' });
    routeOr404(model, body.route_id);
    if (model.routes.length < 2) throw invalid('route_id', `model ${model.id} has no other route to offload from`);
    const policy: OffloadPolicy = {
      route_id: body.route_id, wait_seconds: body.wait_seconds,
      ...(body.engine_queue_limit !== undefined ? { engine_queue_limit: body.engine_queue_limit } : {}),
      ...(body.max_input_tokens !== undefined ? { max_input_tokens: body.max_input_tokens } : {}),
    };
    await deps.runtimeConfig.change(dbOf(deps), (trx) => writeSetting(trx, `${SETTING.offload}${model.id}`, policy));
    ctx.body = offloadView(deps, model.id, policy);
  });
  router.delete('/admin/routing/offload-routes/:model_id', admin, async (ctx) => {
    const modelId = ctx.params.model_id!;
    if (!deps.runtimeConfig.state.settings.has(`${SETTING.offload}${modelId}`)) {
      throw new AppError('not_found', `Model '${modelId}' has no offload policy`, { param: 'model_id' });
    }
    await deps.runtimeConfig.change(dbOf(deps), (trx) => writeSetting(trx, `${SETTING.offload}${modelId}`, null));
    ctx.body = { model_id: modelId, deleted: true };
  });
}

type RoutewiseSettings = Record<string, Record<string, unknown>>;

function routewiseView(deps: GatewayDeps): Record<string, unknown> {
  const installed = AVAILABLE_STRATEGIES.has('routewise');
  return {
    installed, applied: installed, ...(installed ? {} : { reason: ROUTEWISE_MISSING }),
    models: (deps.runtimeConfig.state.settings.get(SETTING.routewise)) ?? {},
    // Live pool state of the process that answered (each gateway process counts its own in-flight requests).
    live: deps.routewise.pools.snapshot(),
  };
}

function routewiseRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.get('/admin/routewise/model-settings', admin, (ctx) => {
    ctx.body = routewiseView(deps);
  });
  router.put('/admin/routewise/model-settings', admin, async (ctx) => {
    const body = await adminBody(ctx, routewiseBody);
    const model = modelOr404(deps, body.model_id);
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      // Read-modify-write under a row lock: two admins changing different models both land.
      const row = await trx('site_settings').where({ key: SETTING.routewise }).forUpdate().first<{ value: RoutewiseSettings } | undefined>('value');
      const current = { ...row?.value };
      if (body.settings === null) delete current[model.id];
      else current[model.id] = body.settings;
      await writeSetting(trx, SETTING.routewise, current);
    });
    ctx.body = routewiseView(deps);
  });
}

export function policiesRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  documentRoute(router, 'PUT', '/admin/routing/offload-routes/:model_id', { body: offloadBody, summary: "Sets a model's offload route." });
  documentRoute(router, 'PUT', '/admin/routewise/model-settings', { body: routewiseBody, summary: "Sets or clears a model's routewise settings." });
  offloadRoutes(router, deps, admin);
  routewiseRoutes(router, deps, admin);
  return router;
}
