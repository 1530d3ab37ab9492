/**
 * Per-model admin switches: the `required_role` visibility override (listing shows
 * baseline, override and effective; the effective role decides `/v1/models` and calls, 404 for a
 * caller who may not see the model) and the per-user concurrency exemption (read on the hot path
 * through `RuntimeConfig.isConcurrencyExempt`).
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import type { GatewayDeps } from '../deps';
import { ROLES, type Role } from '../registry/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, modelOr404, adminRoute } from './http';

const roleSchema = z.enum(ROLES as [Role, ...Role[]]);
const visibilityBody = z.object({ required_role: roleSchema.nullable() }).strict();
const concurrencyBody = z.object({ exempt: z.boolean() }).strict();

function visibilityView(deps: GatewayDeps, modelId: string): Record<string, unknown> {
  const effective = deps.runtimeConfig.effective;
  const override = deps.runtimeConfig.state.visibility.find((v) => v.model_id === modelId)?.required_role ?? null;
  const model = modelOr404(deps, modelId);
  return { model_id: modelId, baseline: effective.baselineRoles.get(modelId) ?? null, override, effective: model.requiredRole ?? null };
}

export function modelsAdminRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  router.get('/admin/models/visibility', admin, (ctx) => {
    ctx.body = { models: deps.runtimeConfig.effective.registry.models.map((m) => visibilityView(deps, m.id)) };
  });
  documentRoute(router, 'PATCH', '/admin/models/:model_id/visibility', { body: visibilityBody, summary: 'Sets the role a model requires.' });
  documentRoute(router, 'PATCH', '/admin/models/:model_id/concurrency', { body: concurrencyBody, summary: "Exempts a model's routes from the outbound concurrency limit." });
  router.patch('/admin/models/:model_id/visibility', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const { required_role: role } = await adminBody(ctx, visibilityBody);
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      if (role === null) await trx('model_visibility_overrides').where({ model_id: model.id }).delete();
      else {
        await trx('model_visibility_overrides').insert({ model_id: model.id, required_role: role, updated_at: trx.fn.now() })
          .onConflict('model_id').merge(['required_role', 'updated_at']);
      }
    });
    ctx.body = visibilityView(deps, model.id);
  });
  router.patch('/admin/models/:model_id/concurrency', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const { exempt } = await adminBody(ctx, concurrencyBody);
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      if (exempt) await trx('model_concurrency_exemptions').insert({ model_id: model.id }).onConflict('model_id').ignore();
      else await trx('model_concurrency_exemptions').where({ model_id: model.id }).delete();
    });
    ctx.body = { model_id: model.id, concurrency_exempt: deps.runtimeConfig.isConcurrencyExempt(model.id) };
  });
  return router;
}
