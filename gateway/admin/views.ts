/**
 * Response shapes of the runtime-configuration admin endpoints. Keys appear only as prefix and
 * fingerprint (see `runtime-config/secrets.ts`).
 */
import type { Model, Route } from '../registry/types';
import type { EffectiveConfig, RouteInfo } from '../runtime-config/overlay';
import { keyView } from '../runtime-config/secrets';

export interface RouteView {
  model_id: string;
  route_id: string;
  endpoint_id: string;
  source: RouteInfo['source'];
  kind: string;
  provider: string;
  provider_display_name: string | null;
  base_url: string;
  upstream_api: Route['upstreamApi'];
  provider_model_id: string;
  weight: number;
  weight_override: number | null;
  effective_weight: number;
  /** False when the effective weight is 0: configured but never used, not even as fallback. */
  published: boolean;
  exclusion_reasons: string[];
  keys: Array<{ prefix: string; fingerprint: string }>;
  candidate_id?: string;
}

export function routeView(model: Model, route: Route, effective: EffectiveConfig): RouteView {
  const info = effective.routes.get(route.routeId);
  return {
    model_id: model.id, route_id: route.routeId, endpoint_id: route.endpointId, source: info?.source ?? 'yaml', kind: route.kind,
    provider: route.providerLabel, provider_display_name: route.providerDisplayName ?? null, base_url: route.baseUrl,
    provider_model_id: route.providerModelId, weight: info?.configuredWeight ?? route.weight, weight_override: info?.overrideWeight ?? null,
    effective_weight: route.weight, published: route.weight > 0, exclusion_reasons: info?.reasons ?? [], upstream_api: route.upstreamApi,
    keys: route.apiKeys.map(keyView), ...(info?.candidateId ? { candidate_id: info.candidateId } : {}),
  };
}

export function modelView(model: Model, effective: EffectiveConfig): Record<string, unknown> {
  return {
    id: model.id, name: model.name, aliases: model.aliases, model_type: model.modelType,
    ...(model.demo ? { demo: true } : {}),
    source: effective.runtimeModels.has(model.id) ? 'runtime' : 'yaml',
    router: model.router ?? 'fixed', required_role: model.requiredRole ?? null,
    concurrency_exempt: effective.exemptions.has(model.id),
    context_length: model.contextLength, max_output_length: model.maxOutputLength,
    routes: model.routes.map((r) => routeView(model, r, effective)),
  };
}
