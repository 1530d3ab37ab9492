/**
 * Second half of the overlay (see `overlay.ts` for the order): key pools, strategy and
 * visibility overrides, effective weights, and the name index of the effective registry.
 */
import { AVAILABLE_STRATEGIES, STRATEGIES } from '../registry';
import { ROLES, type Model, type Registry, type Role, type Route } from '../registry/types';
import { keyReservations, withRoleVariants } from './key-tiers';
import { keyFingerprint } from './secrets';
import { SETTING, type StoredState } from './types';
import type { NotApplied, RouteInfo, RouteSource } from './overlay';

/** Key pool of a route: its own keys minus disabled environment keys, plus added enabled keys. */
export function keyPool(route: Route, state: StoredState, disabledProviderKeys: ReadonlySet<string>): readonly string[] {
  const label = route.providerLabel;
  const own = route.apiKeys.filter((k) => !disabledProviderKeys.has(`${label}\n${keyFingerprint(k)}`));
  const added = state.providerKeys.filter((k) => k.provider === label && !k.disabled_at).map((k) => k.api_key);
  if (added.length === 0 && own.length === route.apiKeys.length) return route.apiKeys;
  return [...own, ...added.filter((k) => !own.includes(k))];
}

/** The strategy override of a model when it names an installed strategy. */
function routerOverride(model: Model, state: StoredState, notApplied: NotApplied): string | undefined {
  const value = state.settings.get(`${SETTING.router}${model.id}`);
  if (value === undefined) return model.router;
  if (typeof value !== 'string' || !STRATEGIES.has(value) || !AVAILABLE_STRATEGIES.has(value)) {
    notApplied(`saved setting not applied as stored: strategy ${JSON.stringify(value)} of model ${model.id} is not an installed strategy`, { model: model.id });
    return model.router;
  }
  return value;
}

function roleOverride(model: Model, overrides: ReadonlyMap<string, Role>): Role | undefined {
  const role = overrides.get(model.id);
  return role !== undefined && ROLES.includes(role) ? role : model.requiredRole;
}

interface WeightInputs {
  state: StoredState;
  sources: ReadonlyMap<string, RouteSource>;
  candidateIds: ReadonlyMap<string, string>;
  weights: ReadonlyMap<string, number>;
  disabledProviders: ReadonlySet<string>;
  disabledKeys: ReadonlySet<string>;
}

/** The effective route and its listing info. */
function effectiveRoute(model: Model, route: Route, inputs: WeightInputs): { route: Route; info: RouteInfo } {
  const apiKeys = keyPool(route, inputs.state, inputs.disabledKeys);
  const override = inputs.weights.get(`${model.id}\n${route.endpointId}`);
  const reasons: string[] = [];
  if (inputs.disabledProviders.has(route.providerLabel)) reasons.push('provider disabled');
  if (route.apiKeys.length > 0 && apiKeys.length === 0) reasons.push('every key of the provider is disabled');
  if (override === 0) reasons.push('admin weight override of 0');
  const weight = reasons.length > 0 ? 0 : override ?? route.weight;
  if (weight === 0 && route.weight === 0 && reasons.length === 0) reasons.push('configured weight 0');
  const candidateId = inputs.candidateIds.get(route.routeId);
  const info: RouteInfo = {
    modelId: model.id, routeId: route.routeId, endpointId: route.endpointId, source: inputs.sources.get(route.routeId) ?? 'yaml',
    configuredWeight: route.weight, overrideWeight: override, effectiveWeight: weight, reasons, ...(candidateId ? { candidateId } : {}),
  };
  const same = weight === route.weight && apiKeys === route.apiKeys;
  return { route: same ? route : { ...route, weight, apiKeys }, info };
}

/** Applies strategy, visibility, keys and weights to every model, then per-role key reservations. */
export function finishModels(models: readonly Model[], inputs: Omit<WeightInputs, 'weights' | 'disabledProviders' | 'disabledKeys'>, notApplied: NotApplied): { models: Model[]; routes: Map<string, RouteInfo> } {
  const { state } = inputs;
  const full: WeightInputs = {
    ...inputs,
    weights: new Map(state.weights.map((w) => [`${w.model_id}\n${w.endpoint_id}`, Number(w.weight)])),
    disabledProviders: new Set(state.disabledProviders.map((d) => d.provider)),
    disabledKeys: new Set(state.disabledEnvKeys.map((d) => `${d.provider}\n${d.fingerprint}`)),
  };
  const visibility = new Map(state.visibility.map((v) => [v.model_id, v.required_role]));
  const reserved = keyReservations(state);
  const routes = new Map<string, RouteInfo>();
  const out = models.map((model) => {
    const router = routerOverride(model, state, notApplied);
    const requiredRole = roleOverride(model, visibility);
    let changed = router !== model.router || requiredRole !== model.requiredRole;
    const effective = model.routes.map((r) => {
      const { route, info } = effectiveRoute(model, r, full);
      routes.set(info.routeId, info);
      if (route !== r) changed = true;
      return route;
    });
    return withRoleVariants(changed ? { ...model, router, requiredRole, routes: effective } : model, reserved);
  });
  reportOrphans(out, state, notApplied);
  return { models: out, routes };
}

/** Overrides naming a model or endpoint that no longer exists are kept in storage but reported. */
function reportOrphans(models: readonly Model[], state: StoredState, notApplied: NotApplied): void {
  const endpoints = new Set(models.flatMap((m) => m.routes.map((r) => `${m.id}\n${r.endpointId}`)));
  const ids = new Set(models.map((m) => m.id));
  for (const w of state.weights) {
    if (!endpoints.has(`${w.model_id}\n${w.endpoint_id}`)) {
      notApplied(`saved setting not applied as stored: weight override of ${w.endpoint_id} for model ${w.model_id}: no such endpoint`, { model: w.model_id, endpoint_id: w.endpoint_id });
    }
  }
  for (const v of state.visibility) {
    if (!ids.has(v.model_id)) notApplied(`saved setting not applied as stored: visibility override of model ${v.model_id}: no such model`, { model: v.model_id });
  }
}

/** The name index of the effective registry (a later model wins a name, as in the file loader). */
export function indexRegistry(source: string, models: readonly Model[]): Registry {
  const byName = new Map<string, Model>();
  for (const model of models) for (const name of [model.id, ...model.aliases]) byName.set(name, model);
  const distinct = new Set(byName.values());
  return { source, models: models.filter((m) => distinct.has(m)), byName, routesConfigured: byName.size };
}
