/**
 * The routing file (docs/routing-file.md) put together: resolved path (env > active manifest > bundled
 * default), loaded, applied to the registry, and its local endpoints probed.
 *
 * `/health/deep` lists the split's route weights through {@link routingFileExclusions}.
 */
import type { Logger } from '../../lib/logger';
import { AVAILABLE_STRATEGIES, STRATEGIES } from '../registry';
import { manifestPaths, type DistributionState } from '../registry/manifest';
import { resolveConfigPath, type PathEnv } from '../registry/paths';
import type { Registry } from '../registry/types';
import type { Env } from './expand';
import { EndpointHealthProbe } from './health-probe';
import { loadRoutingFile, type RoutingFileState } from './load';
import { applyDefaultRouter, applyLocalRemoteSplit, type RoutingFileAdjustment } from './split';

export { SPLIT_REASON, type RoutingFileAdjustment } from './split';
export type { EndpointHealth } from './health-probe';
export type { RoutingFileState } from './load';

/** The routing file as one gateway process applies it. */
export interface RoutingFile {
  state: RoutingFileState;
  /** True when the local/remote split was applied (a gateway without a database and some match). */
  splitApplied: boolean;
  /** Route weights the split set (empty with a database). */
  adjustments: readonly RoutingFileAdjustment[];
  /** Health probing of local entries (report only). */
  probe: EndpointHealthProbe;
}

/**
 * The routing-file entries of `/health/deep` `route_exclusions`: one per (model,
 * endpoint) whose weight the local/remote split set, with configured weight, effective weight and
 * reasons (`routing-file local/remote split`, plus `route matches no routing-file deployment entry`
 * for a split model's unmatched routes). Always empty on a gateway with a database. Filter on
 * `effectiveWeight === 0` for exclusions proper; the others are adjustments.
 */
export function routingFileExclusions(routingFile: RoutingFile | undefined): readonly RoutingFileAdjustment[] {
  return routingFile?.adjustments ?? [];
}

/**
 * Loads the routing file and returns the registry to serve: the default router applied, and the
 * local/remote split when there is no database (with one, registry weights and admin overrides
 * rule and the split is never computed). Throws `RegistryConfigError` when startup must stop.
 */
export function prepareRoutingFile(options: {
  registry: Registry;
  settings: PathEnv & { ENABLE_ROUTEWISE: boolean };
  env: Env;
  cwd: string;
  log: Logger;
  distribution: DistributionState;
  databaseConfigured: boolean;
}): { registry: Registry; routingFile: RoutingFile } {
  const { settings, log } = options;
  const manifest = manifestPaths(options.distribution);
  const path = resolveConfigPath('routing', settings, { cwd: options.cwd, ...(manifest ? { manifest } : {}) });
  const state = loadRoutingFile({
    path, env: options.env, log, enableRoutewise: settings.ENABLE_ROUTEWISE, strategies: { known: STRATEGIES, available: AVAILABLE_STRATEGIES },
  });
  let registry = applyDefaultRouter(options.registry, state.defaultRouter);
  let adjustments: readonly RoutingFileAdjustment[] = [];
  const hasEntries = state.config.local_deployment.length + state.config.remote_deployment.length > 0;
  if (options.databaseConfigured) {
    if (hasEntries) log.info({ path: state.source }, 'Routing-file local/remote split not applied: with a database, registry weights and admin overrides decide');
  } else {
    const split = applyLocalRemoteSplit(registry, state.config, state.defaultRouter);
    registry = split.registry;
    adjustments = split.adjustments;
    if (adjustments.length > 0) {
      log.info({ path: state.source, routes: adjustments.length, local_fraction: state.config.local_fraction }, `Routing-file local/remote split applied to ${new Set(adjustments.map((a) => a.modelId)).size} model(s)`);
    }
  }
  const probe = new EndpointHealthProbe({ config: state.config, log });
  return { registry, routingFile: { state, splitApplied: adjustments.length > 0, adjustments, probe } };
}
