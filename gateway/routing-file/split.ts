/**
 * The routing file's effect on the registry (docs/routing-file.md), as pure functions returning a new
 * registry (the input is never mutated; untouched models keep their identity):
 *
 * - {@link applyDefaultRouter}: models naming no `router` get the file's default (only when it is
 *   not `fixed`, which is what an absent `router` already means everywhere);
 * - {@link applyLocalRemoteSplit}: for models routed `fixed`, routes are sorted into local and
 *   remote by exact `base_url` = entry `endpoint` match with the model (id or alias) listed in the
 *   entry's `models`. The local group gets `local_fraction` of the traffic (default half), the
 *   remote group the rest, spread evenly within each group, so the weights sum to 1.0. One group
 *   empty: the other gets everything. A split model's routes that match no entry get weight 0
 *   (the split owns the whole share); routes configured with weight 0 stay at 0 and out of the
 *   groups; models with no matching route keep the registry weights.
 *   Applied only on a gateway without a database (the caller decides).
 */
import { indexRegistry } from '../runtime-config/overlay-apply';
import type { Model, Registry, Route } from '../registry/types';
import type { DeploymentEntry, RoutingFileConfig } from './schema';

/** The reason `/health/deep` lists for a weight set by the split. */
export const SPLIT_REASON = 'routing-file local/remote split';

export type SplitGroup = 'local' | 'remote' | 'unmatched';

/** One route whose weight the routing file set: what `/health/deep` shows under `route_exclusions`. */
export interface RoutingFileAdjustment {
  modelId: string;
  routeId: string;
  endpointId: string;
  baseUrl: string;
  group: SplitGroup;
  /** The registry (models file) weight. */
  configuredWeight: number;
  /** The weight the split gave the route (0: excluded from routing). */
  effectiveWeight: number;
  /** `[SPLIT_REASON]`, plus a second reason for routes matching no entry. */
  reasons: string[];
}

export interface SplitResult {
  registry: Registry;
  adjustments: readonly RoutingFileAdjustment[];
}

/** Models without a `router` get `defaultRouter` when it is not `fixed`. */
export function applyDefaultRouter(registry: Registry, defaultRouter: string): Registry {
  if (defaultRouter === 'fixed' || registry.models.every((m) => m.router !== undefined)) return registry;
  return indexRegistry(registry.source, registry.models.map((m) => (m.router === undefined ? { ...m, router: defaultRouter } : m)));
}

function names(model: Model): string[] {
  return [model.id, ...model.aliases];
}

function matches(entries: readonly DeploymentEntry[], model: Model, route: Route): boolean {
  const own = names(model);
  return entries.some((e) => e.endpoint === route.baseUrl && e.models.some((m) => own.includes(m)));
}

function groupOf(config: RoutingFileConfig, model: Model, route: Route): SplitGroup {
  if (matches(config.local_deployment, model, route)) return 'local';
  if (matches(config.remote_deployment, model, route)) return 'remote';
  return 'unmatched';
}

/** The split weights of one model's routes, or undefined when no route matches an entry. */
function splitModel(model: Model, config: RoutingFileConfig): { model: Model; adjustments: RoutingFileAdjustment[] } | undefined {
  const groups = model.routes.map((r) => (r.weight > 0 ? groupOf(config, model, r) : undefined));
  const local = groups.filter((g) => g === 'local').length;
  const remote = groups.filter((g) => g === 'remote').length;
  if (local + remote === 0) return undefined;
  const localShare = remote === 0 ? 1 : local === 0 ? 0 : config.local_fraction;
  const share: Record<SplitGroup, number> = { local: local ? localShare / local : 0, remote: remote ? (1 - localShare) / remote : 0, unmatched: 0 };
  const adjustments: RoutingFileAdjustment[] = [];
  const routes = model.routes.map((route, i) => {
    const group = groups[i];
    if (group === undefined) return route;
    const weight = share[group];
    const reasons = group === 'unmatched' ? [SPLIT_REASON, 'route matches no routing-file deployment entry'] : [SPLIT_REASON];
    adjustments.push({
      modelId: model.id, routeId: route.routeId, endpointId: route.endpointId, baseUrl: route.baseUrl, group,
      configuredWeight: route.weight, effectiveWeight: weight, reasons,
    });
    return { ...route, weight };
  });
  return { model: { ...model, routes }, adjustments };
}

/** The registry with the local/remote split applied to models routed `fixed` (see the file comment). */
export function applyLocalRemoteSplit(registry: Registry, config: RoutingFileConfig, defaultRouter: string): SplitResult {
  if (config.local_deployment.length === 0 && config.remote_deployment.length === 0) return { registry, adjustments: [] };
  const adjustments: RoutingFileAdjustment[] = [];
  let changed = false;
  const models = registry.models.map((model) => {
    if ((model.router ?? defaultRouter) !== 'fixed') return model;
    const split = splitModel(model, config);
    if (!split) return model;
    changed = true;
    adjustments.push(...split.adjustments);
    return split.model;
  });
  return { registry: changed ? indexRegistry(registry.source, models) : registry, adjustments };
}
