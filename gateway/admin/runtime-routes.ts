/**
 * Runtime models and runtime routes (docs/runtime-config.md): create a runtime model with its first route
 * (catalog defaults: context_length 8192, max_output_length 4096, text in/out, no tools;
 * `required_role` default `admin`), add, change and remove runtime routes of any model, and try
 * either without saving (verifications).
 */
import type Router from '@koa/router';
import { createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { Knex } from 'knex';
import { AppError } from '../../lib/errors';
import type { GatewayDeps } from '../deps';
import type { Model } from '../registry/types';
import { probeUpstream } from '../runtime-config/probe';
import { writeSetting } from '../runtime-config/store';
import { SETTING, type CandidateRow, type OffloadPolicy, type RuntimeModelRecord } from '../runtime-config/types';
import type { GatewayState } from '../surfaces/state';
import { adminBody, dbOf, modelOr404, adminRoute } from './http';
import { candidateRow, routeFields, rowColumns, runtimeModelBody, trialRoute, type RuntimeModelBody } from './route-input';
import { checkStrategy } from './routing';
import { modelView, routeView } from './views';

/** Catalog defaults of a model created at runtime: context 8192, output 4096, text in/out, no tools. */
export function runtimeModelRecord(body: RuntimeModelBody): RuntimeModelRecord {
  return {
    name: body.name ?? body.id,
    context_length: body.context_length ?? 8192,
    max_output_length: body.max_output_length ?? 4096,
    input_modalities: body.input_modalities ?? ['text'],
    output_modalities: body.output_modalities ?? ['text'],
    supports_tools: body.supports_tools ?? false,
    ...(body.pricing ? { pricing: body.pricing } : {}),
  };
}

function modelFields(record: { context_length: number; max_output_length: number; supports_tools?: boolean; pricing?: Record<string, string> }): Record<string, unknown> {
  return {
    context_length: record.context_length, max_output_length: record.max_output_length,
    ...(record.supports_tools !== undefined ? { supports_tools: record.supports_tools } : {}),
    ...(record.pricing ? { pricing: record.pricing } : {}),
  };
}

const fieldsOfModel = (model: Model) => ({ context_length: model.contextLength, max_output_length: model.maxOutputLength });

/** Validates a runtime-model body; returns the record and its first route's row. */
function prepareRuntimeModel(deps: GatewayDeps, body: RuntimeModelBody): { record: RuntimeModelRecord; row: CandidateRow } {
  if (body.router !== undefined) checkStrategy(body.router);
  const record = runtimeModelRecord(body);
  const providers = deps.runtimeConfig.effective.providers;
  const row = candidateRow(body.id, body.route, providers);
  trialRoute(row, modelFields(record), providers);
  return { record, row };
}

function runtimeModelRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.post('/admin/routing/provider-route-models', admin, async (ctx) => {
    const body = await adminBody(ctx, runtimeModelBody);
    const { record, row } = prepareRuntimeModel(deps, body);
    if (deps.runtimeConfig.effective.registry.byName.has(body.id) || deps.runtimeConfig.state.settings.has(`${SETTING.runtimeModel}${body.id}`)) {
      throw new AppError('conflict', `A model named '${body.id}' already exists`, { param: 'id' });
    }
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      await writeSetting(trx, `${SETTING.runtimeModel}${body.id}`, record);
      await writeSetting(trx, `${SETTING.requiredRole}${body.id}`, body.required_role ?? 'admin');
      if (body.router) await writeSetting(trx, `${SETTING.router}${body.id}`, body.router);
      await trx('provider_route_candidates').insert(rowColumns(row));
    });
    ctx.status = 201;
    ctx.body = modelView(modelOr404(deps, body.id), deps.runtimeConfig.effective);
  });
  router.post('/admin/routing/provider-route-model-verifications', admin, async (ctx) => {
    const body = await adminBody(ctx, runtimeModelBody);
    const { record, row } = prepareRuntimeModel(deps, body);
    const route = trialRoute(row, modelFields(record), deps.runtimeConfig.effective.providers);
    ctx.body = { model_id: body.id, saved: false, ...(await probeUpstream({ kind: route.kind, baseUrl: route.baseUrl, apiKey: route.apiKeys[0], providerModelId: route.providerModelId, upstreamApi: route.upstreamApi })) };
  });
}

/** The stored runtime route `route_id` (`<model>#c<id>`) of a model, or 404. */
function storedCandidate(deps: GatewayDeps, model: Model, routeId: string): CandidateRow {
  const match = /#c(\d+)$/.exec(routeId);
  const row = match && routeId === `${model.id}#c${match[1]}` ? deps.runtimeConfig.state.candidates.find((c) => c.id === match[1] && c.model_id === model.id) : undefined;
  if (!row) throw new AppError('not_found', `Model '${model.id}' has no runtime route '${routeId}'`, { param: 'route_id' });
  return row;
}

/** Why a runtime route may not be deleted now, if it may not. */
function deleteRefusal(deps: GatewayDeps, model: Model, routeId: string): string | undefined {
  const policy = deps.runtimeConfig.state.settings.get(`${SETTING.offload}${model.id}`) as OffloadPolicy | undefined;
  if (policy?.route_id === routeId) return `Route ${routeId} is the offload route of ${model.id}; clear the offload policy first`;
  const runtime = deps.runtimeConfig.effective.runtimeModels.has(model.id);
  if (runtime && deps.runtimeConfig.state.candidates.filter((c) => c.model_id === model.id).length <= 1) {
    return `Route ${routeId} is the last route of runtime model ${model.id}`;
  }
  return undefined;
}

async function insertCandidate(trx: Knex.Transaction, row: CandidateRow): Promise<string> {
  const [inserted] = await trx('provider_route_candidates').insert(rowColumns(row)).returning<Array<{ id: string | number }>>('id');
  return String(inserted!.id);
}

function candidateRoutes(router: Router<GatewayState>, deps: GatewayDeps, admin: AccessGuard<GatewayState>): void {
  router.post('/admin/routing/provider-route-candidates/:model_id', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const providers = deps.runtimeConfig.effective.providers;
    const row = candidateRow(model.id, await adminBody(ctx, routeFields), providers);
    trialRoute(row, fieldsOfModel(model), providers);
    const id = await deps.runtimeConfig.change(dbOf(deps), (trx) => insertCandidate(trx, row));
    const now = modelOr404(deps, model.id);
    ctx.status = 201;
    ctx.body = routeView(now, now.routes.find((r) => r.routeId === `${model.id}#c${id}`)!, deps.runtimeConfig.effective);
  });
  router.post('/admin/routing/provider-route-candidate-verifications/:model_id', admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const providers = deps.runtimeConfig.effective.providers;
    const route = trialRoute(candidateRow(model.id, await adminBody(ctx, routeFields), providers), fieldsOfModel(model), providers);
    ctx.body = { model_id: model.id, saved: false, ...(await probeUpstream({ kind: route.kind, baseUrl: route.baseUrl, apiKey: route.apiKeys[0], providerModelId: route.providerModelId, upstreamApi: route.upstreamApi })) };
  });
  const one = '/admin/routing/provider-route-candidates/:model_id/:route_id';
  router.patch(one, admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const previous = storedCandidate(deps, model, ctx.params.route_id!);
    const providers = deps.runtimeConfig.effective.providers;
    const row = candidateRow(model.id, await adminBody(ctx, routeFields), providers, previous);
    trialRoute(row, fieldsOfModel(model), providers);
    await deps.runtimeConfig.change(dbOf(deps), (trx) => trx('provider_route_candidates').where({ id: row.id }).update({ ...rowColumns(row), updated_at: trx.fn.now() }));
    const now = modelOr404(deps, model.id);
    ctx.body = routeView(now, now.routes.find((r) => r.routeId === ctx.params.route_id)!, deps.runtimeConfig.effective);
  });
  router.delete(one, admin, async (ctx) => {
    const model = modelOr404(deps, ctx.params.model_id!);
    const row = storedCandidate(deps, model, ctx.params.route_id!);
    const refusal = deleteRefusal(deps, model, ctx.params.route_id!);
    if (refusal) throw new AppError('conflict', refusal, { param: 'route_id' });
    await deps.runtimeConfig.change(dbOf(deps), async (trx) => {
      await trx('provider_route_candidates').where({ id: row.id }).delete();
      await trx('provider_weight_overrides').where({ model_id: model.id, endpoint_id: `ep_rt_${row.id}` }).delete();
    });
    ctx.body = { model_id: model.id, route_id: ctx.params.route_id, deleted: true };
  });
}

export function runtimeRoutesRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>();
  const admin = adminRoute(deps);
  documentRoute(router, 'POST', '/admin/routing/provider-route-models', { body: runtimeModelBody, success: 201, statuses: [409], summary: 'Adds a runtime model with its first route.' });
  documentRoute(router, 'POST', '/admin/routing/provider-route-model-verifications', { body: runtimeModelBody, summary: 'Probes a runtime model without saving it.' });
  documentRoute(router, 'POST', '/admin/routing/provider-route-candidates/:model_id', { body: routeFields, success: 201, summary: 'Adds a runtime route to a model.' });
  documentRoute(router, 'POST', '/admin/routing/provider-route-candidate-verifications/:model_id', { body: routeFields, summary: 'Probes a runtime route without saving it.' });
  documentRoute(router, 'PATCH', '/admin/routing/provider-route-candidates/:model_id/:route_id', { body: routeFields, summary: 'Changes a runtime route.' });
  runtimeModelRoutes(router, deps, admin);
  candidateRoutes(router, deps, admin);
  return router;
}
