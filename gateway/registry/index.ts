/**
 * The gateway's model registry: loading from the resolved models file with the project's
 * adapter kinds and routing strategies.
 */
import type { Logger } from '../../lib/logger';
import { BUILTIN_ADAPTER_KINDS, defaultAdapterKindRegistry, resolveAdapterKind, type AdapterKindRegistry } from '../adapters';
import type { BuildContext } from './model-builder';
import { emptyRegistry, loadRegistry } from './loader';
import { loadDistribution, manifestPaths, type DistributionState } from './manifest';
import { resolveConfigPath, type ActiveManifestPaths, type PathEnv } from './paths';
import type { Registry } from './types';

export type { Model, Registry, Route } from './types';
export { RegistryConfigError } from './errors';

/**
 * Routing strategies and the `router_params` keys each accepts. `fixed` accepts
 * `local_fraction` without effect. `routewise` is the cost-aware strategy
 * (`gateway/routing/routewise.ts`, docs/routewise.md). A strategy known but missing from
 * {@link AVAILABLE_STRATEGIES} stops startup saying its package is not installed.
 */
export const STRATEGIES: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['fixed', new Set(['local_fraction'])],
  ['routewise', new Set(['objective', 'probe_interval_seconds', 'max_latency_ms'])],
]);
export const AVAILABLE_STRATEGIES: ReadonlySet<string> = new Set(['fixed', 'routewise']);

/** What the model builder needs besides the file: env for `${NAME}`, kinds, labels, strategies. */
export function registryBuildContext(
  env: Readonly<Record<string, string | undefined>>,
  kinds: AdapterKindRegistry = defaultAdapterKindRegistry,
): Omit<BuildContext, 'file' | 'warn'> {
  return {
    env,
    resolveKind: (kind) => resolveAdapterKind(kind, kinds).family,
    reservedLabels: new Set(BUILTIN_ADAPTER_KINDS),
    strategies: STRATEGIES,
    availableStrategies: AVAILABLE_STRATEGIES,
  };
}

/** Resolves the models file (env > active manifest > bundled default) and loads it. */
export function loadGatewayRegistry(options: {
  pathEnv: PathEnv;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  log: Logger;
  manifest?: ActiveManifestPaths;
}): Registry {
  const path = resolveConfigPath('models', options.pathEnv, { cwd: options.cwd, ...(options.manifest ? { manifest: options.manifest } : {}) });
  return loadRegistry({ path, log: options.log, ...registryBuildContext(options.env) });
}

/**
 * Reads the distribution manifest (docs/registry.md "Distribution manifest"), then the registry
 * with the manifest's paths when it is active. An active manifest that failed to load leaves the
 * gateway with no models.
 */
export function loadGatewayConfiguration(options: {
  settings: PathEnv & { DISTRIBUTION_CONFIG_PATH?: string | undefined; DISTRIBUTION_CONFIG_MODE?: string | undefined };
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  log: Logger;
}): { registry: Registry; distribution: DistributionState } {
  const { settings, env, cwd, log } = options;
  const distribution = loadDistribution({ path: settings.DISTRIBUTION_CONFIG_PATH, mode: settings.DISTRIBUTION_CONFIG_MODE, cwd, log });
  if (distribution.status === 'failed') return { registry: emptyRegistry('(active manifest failed to load)'), distribution };
  const manifest = manifestPaths(distribution);
  return { registry: loadGatewayRegistry({ pathEnv: settings, env, cwd, log, ...(manifest ? { manifest } : {}) }), distribution };
}
