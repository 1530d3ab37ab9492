/**
 * The overlay: effective registry = registry loaded from files + stored runtime state (re-applied
 * on top of the files at every start; docs/runtime-config.md). Pure: given the file registry and
 * the stored rows it returns a new registry (never mutating the input; unchanged routes keep their
 * object identity) plus what the admin listings need (each route's source and weights). Order,
 * lowest to highest:
 *   1. custom provider definitions (slugs owned by code or the registry are skipped)
 *   2. retarget overrides of registry routes (source `override`; endpoint_id and route id kept)
 *   3. runtime models and runtime routes (source `runtime`)
 *   4. provider keys: added keys join the pool of every route with that provider label,
 *      disabled environment keys leave it
 *   5. strategy overrides, then visibility overrides (required_role)
 *   6. effective weight: 0 for a disabled provider or an emptied key pool, else the admin
 *      weight override, else the configured weight
 * A stored value that cannot be applied is reported through `notApplied` and skipped.
 */
import { BUILTIN_ADAPTER_KINDS, resolveAdapterKind } from '../adapters';
import { registryBuildContext } from '../registry';
import { finishModels, indexRegistry } from './overlay-apply';
import { buildModel, type BuildContext } from '../registry/model-builder';
import { ROLES, type Model, type Registry, type Role, type Route } from '../registry/types';
import { SETTING, type CandidateRow, type ProviderDefinitionRow, type RouteConfigRow, type RuntimeModelRecord, type StoredState } from './types';

export type RouteSource = 'yaml' | 'override' | 'runtime';

/** What the admin listings show about one effective route. */
export interface RouteInfo {
  modelId: string;
  routeId: string;
  endpointId: string;
  source: RouteSource;
  /** Weight from the file (or the runtime route's own weight). */
  configuredWeight: number;
  overrideWeight: number | undefined;
  effectiveWeight: number;
  /** Why the effective weight is 0, when it is. */
  reasons: string[];
  /** The `provider_route_candidates` id of a runtime route. */
  candidateId?: string;
}

export interface EffectiveConfig {
  registry: Registry;
  /** Route id → info, for every route of every effective model. */
  routes: ReadonlyMap<string, RouteInfo>;
  /** required_role before visibility overrides (file value, or a runtime model's marker). */
  baselineRoles: ReadonlyMap<string, Role | undefined>;
  runtimeModels: ReadonlySet<string>;
  exemptions: ReadonlySet<string>;
  /** Custom providers that were applied (slug → definition). */
  providers: ReadonlyMap<string, ProviderDefinitionRow>;
  revision: number;
}

export type NotApplied = (message: string, fields: Record<string, unknown>) => void;

const LABEL = /^[a-z0-9_-]{1,64}$/;
const BUILTIN = new Set(BUILTIN_ADAPTER_KINDS);

/** Provider labels used by file routes: owned by the registry, so custom providers may not take them. */
export function registryLabels(base: Registry): Set<string> {
  return new Set(base.models.flatMap((m) => m.routes.map((r) => r.providerLabel)));
}

function applyProviders(base: Registry, state: StoredState, notApplied: NotApplied): Map<string, ProviderDefinitionRow> {
  const owned = registryLabels(base);
  const out = new Map<string, ProviderDefinitionRow>();
  for (const p of state.providers) {
    if (BUILTIN.has(p.slug) || owned.has(p.slug)) {
      notApplied(`saved setting not applied as stored: provider definition '${p.slug}' skipped: the slug is owned by ${BUILTIN.has(p.slug) ? 'code (a built-in adapter kind)' : 'the registry file'}`, { provider: p.slug });
      continue;
    }
    out.set(p.slug, p);
  }
  return out;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Why a retarget cannot be applied: the field at fault and the reason. */
export interface RetargetProblem {
  field: string;
  message: string;
}

/** Applies a retarget override to a registry route, or explains why it cannot. */
export function retargetRoute(route: Route, row: RouteConfigRow, providers: ReadonlyMap<string, ProviderDefinitionRow>): Route | RetargetProblem {
  const { config } = row;
  const custom = config.provider !== undefined ? providers.get(config.provider) : undefined;
  const kind = config.kind ?? custom?.kind ?? route.kind;
  try {
    resolveAdapterKind(kind);
  } catch {
    return { field: 'kind', message: `unknown adapter kind '${kind}'` };
  }
  const baseUrl = config.base_url ?? custom?.base_url ?? route.baseUrl;
  if (!isHttpUrl(baseUrl)) return { field: 'base_url', message: `'${baseUrl}' is not an http(s) URL` };
  const label = config.provider ?? route.providerLabel;
  if (label !== kind && (!LABEL.test(label) || BUILTIN.has(label))) return { field: 'provider', message: `provider label '${label}' is malformed or reserved` };
  const key = row.api_key ?? custom?.api_key ?? undefined;
  return {
    ...route, kind, baseUrl, providerLabel: label,
    providerModelId: config.provider_model_id ?? route.providerModelId,
    apiKeys: key ? [key] : route.apiKeys,
  };
}

/** The raw (file-shaped) route entry of a runtime route. */
function rawCandidate(row: CandidateRow, providers: ReadonlyMap<string, ProviderDefinitionRow>): Record<string, unknown> {
  const custom = row.provider ? providers.get(row.provider) : undefined;
  const label = row.provider && !BUILTIN.has(row.provider) ? row.provider : undefined;
  const key = row.api_key ?? custom?.api_key ?? undefined;
  return {
    ...row.settings,
    kind: row.kind,
    base_url: row.base_url ?? custom?.base_url,
    weight: row.weight,
    ...(key ? { api_key: key } : {}),
    ...(row.provider_model_id ? { provider_model_id: row.provider_model_id } : {}),
    ...(label ? { provider: label } : {}),
    ...(custom ? { provider_display_name: custom.display_name } : {}),
  };
}

const buildContext = (): BuildContext => ({
  ...registryBuildContext({}), file: 'runtime configuration', warn: () => undefined,
});

/** Builds one runtime route with the model-level fields given, or explains why it cannot. */
export function buildCandidate(modelId: string, modelFields: Record<string, unknown>, row: CandidateRow, providers: ReadonlyMap<string, ProviderDefinitionRow>): Route | string {
  try {
    const outcome = buildModel({ ...modelFields, id: modelId, name: modelId, route: [rawCandidate(row, providers)] }, 0, buildContext());
    if (!('model' in outcome)) return outcome.skipped;
    const route = outcome.model.routes[0]!;
    return { ...route, routeId: `${modelId}#c${row.id}`, endpointId: `ep_rt_${row.id}` };
  } catch (err) {
    return (err as Error).message;
  }
}

interface Building {
  models: Model[];
  sources: Map<string, RouteSource>;
  candidateIds: Map<string, string>;
  baselineRoles: Map<string, Role | undefined>;
  runtimeModels: Set<string>;
}

function addCandidates(model: Model, rows: CandidateRow[], ctx: { providers: ReadonlyMap<string, ProviderDefinitionRow>; notApplied: NotApplied; out: Building }, fields: Record<string, unknown>): Route[] {
  const routes: Route[] = [];
  for (const row of rows) {
    const built = buildCandidate(model.id, fields, row, ctx.providers);
    if (typeof built === 'string') {
      ctx.notApplied(`saved setting not applied as stored: runtime route ${row.id} of model ${model.id}: ${built}`, { model: model.id, candidate_id: row.id });
      continue;
    }
    ctx.out.sources.set(built.routeId, 'runtime');
    ctx.out.candidateIds.set(built.routeId, row.id);
    routes.push(built);
  }
  return routes;
}

function registryModels(base: Registry, state: StoredState, providers: ReadonlyMap<string, ProviderDefinitionRow>, notApplied: NotApplied, out: Building): void {
  const configs = new Map(state.routeConfigs.map((c) => [c.route_id, c]));
  for (const model of base.models) {
    let changed = false;
    const routes = model.routes.map((route) => {
      out.sources.set(route.routeId, 'yaml');
      const config = configs.get(route.routeId);
      if (!config || config.model_id !== model.id) return route;
      const result = retargetRoute(route, config, providers);
      if ('field' in result) {
        notApplied(`saved setting not applied as stored: retarget of route ${route.routeId}: ${result.field}: ${result.message}`, { model: model.id, route_id: route.routeId });
        return route;
      }
      out.sources.set(route.routeId, 'override');
      changed = true;
      return result;
    });
    const rows = state.candidates.filter((c) => c.model_id === model.id);
    const extra = addCandidates(model, rows, { providers, notApplied, out }, { context_length: model.contextLength, max_output_length: model.maxOutputLength });
    out.baselineRoles.set(model.id, model.requiredRole);
    out.models.push(changed || extra.length > 0 ? { ...model, routes: [...routes, ...extra] } : model);
  }
}

function runtimeModels(base: Registry, state: StoredState, providers: ReadonlyMap<string, ProviderDefinitionRow>, notApplied: NotApplied, out: Building): void {
  for (const [key, value] of state.settings) {
    if (!key.startsWith(SETTING.runtimeModel)) continue;
    const id = key.slice(SETTING.runtimeModel.length);
    if (base.byName.has(id)) {
      notApplied(`saved setting not applied as stored: runtime model '${id}' skipped: the registry file defines that name`, { model: id });
      continue;
    }
    const record = value as RuntimeModelRecord;
    const fields = {
      context_length: record.context_length, max_output_length: record.max_output_length, input_modalities: record.input_modalities,
      output_modalities: record.output_modalities, supports_tools: record.supports_tools, ...(record.pricing ? { pricing: record.pricing } : {}),
    };
    const stub: Model = {
      id, name: record.name, aliases: [], modelType: 'chat', router: undefined, routerParams: {}, requiredRole: undefined, onDemand: false,
      contextLength: record.context_length, maxOutputLength: record.max_output_length, routes: [],
    };
    const routes = addCandidates(stub, state.candidates.filter((c) => c.model_id === id), { providers, notApplied, out }, fields);
    if (routes.length === 0) {
      notApplied(`saved setting not applied as stored: runtime model '${id}' has no usable route`, { model: id });
      continue;
    }
    const marker = state.settings.get(`${SETTING.requiredRole}${id}`);
    const role = ROLES.includes(marker as Role) ? (marker as Role) : 'admin';
    out.baselineRoles.set(id, role);
    out.runtimeModels.add(id);
    out.models.push({ ...stub, requiredRole: role, routes });
  }
}

/** Builds the effective configuration from the file registry and the stored state. */
export function buildEffectiveConfig(base: Registry, state: StoredState, notApplied: NotApplied): EffectiveConfig {
  const providers = applyProviders(base, state, notApplied);
  const out: Building = { models: [], sources: new Map(), candidateIds: new Map(), baselineRoles: new Map(), runtimeModels: new Set() };
  registryModels(base, state, providers, notApplied, out);
  runtimeModels(base, state, providers, notApplied, out);
  const { models, routes } = finishModels(out.models, { state, sources: out.sources, candidateIds: out.candidateIds }, notApplied);
  const unchanged = models.length === base.models.length && models.every((m, i) => m === base.models[i]);
  return {
    registry: unchanged ? base : indexRegistry(base.source, models),
    routes, baselineRoles: out.baselineRoles, runtimeModels: out.runtimeModels, exemptions: new Set(state.exemptions), providers,
    revision: state.revision,
  };
}
