/**
 * Reads the routing file (docs/routing-file.md) from its resolved path and settles the default router.
 *
 * - missing file: a warning, the defaults apply (status `not_found`);
 * - invalid YAML or an invalid document: logged `RoutingManager failed to initialize`, the
 *   defaults apply and the registry keeps its weights (status `failed`);
 * - an unknown `default_router` stops startup listing the known strategies, like the models file;
 * - `ENABLE_ROUTEWISE=true` (deprecated) turns a `fixed` default into `routewise`; a default naming
 *   a strategy that is known but not installed stops startup saying so.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { Logger } from '../../lib/logger';
import { RegistryConfigError } from '../registry/errors';
import type { ResolvedPath } from '../registry/paths';
import { expandDeep, type Env } from './expand';
import { DEFAULT_ROUTING_FILE, parseRoutingDocument, type RoutingFileConfig } from './schema';

export type RoutingFileStatus = 'loaded' | 'failed' | 'not_found';

/** The routing file as the gateway applies it. */
export interface RoutingFileState {
  status: RoutingFileStatus;
  /** The resolved path (whether or not it exists). */
  source: string;
  /** The parsed file, or the defaults when missing or failed. */
  config: RoutingFileConfig;
  /** Router for models that name none, after `ENABLE_ROUTEWISE`. */
  defaultRouter: string;
  /** Why the file failed (status `failed`). */
  failure?: string;
}

export interface StrategyCatalogue {
  /** Every known strategy name (the models file's `STRATEGIES`). */
  known: ReadonlySet<string> | ReadonlyMap<string, unknown>;
  /** Strategies whose implementation is installed. */
  available: ReadonlySet<string>;
}

/** The default router after the deprecated switch; throws {@link RegistryConfigError} when startup must stop. */
export function resolveDefaultRouter(options: {
  fileRouter: string;
  file: string;
  enableRoutewise: boolean;
  strategies: StrategyCatalogue;
  log: Pick<Logger, 'warn'>;
}): string {
  const { fileRouter, file, strategies } = options;
  if (!strategies.known.has(fileRouter)) {
    throw new RegistryConfigError(`${file}: unknown default_router '${fileRouter}'; known strategies: ${[...strategies.known.keys()].join(', ')}`);
  }
  let router = fileRouter;
  if (options.enableRoutewise && fileRouter === 'fixed') {
    options.log.warn({ setting: 'ENABLE_ROUTEWISE' }, 'ENABLE_ROUTEWISE is deprecated; set default_router: routewise in the routing file instead. The cost-aware router is now the default');
    router = 'routewise';
  }
  if (!strategies.available.has(router)) {
    const why = options.enableRoutewise && fileRouter === 'fixed' ? 'ENABLE_ROUTEWISE=true' : `default_router '${router}'`;
    throw new RegistryConfigError(`${file}: ${why} selects the cost-aware strategy '${router}', but the cost-aware strategy is not installed; set default_router: fixed (and unset ENABLE_ROUTEWISE)`);
  }
  return router;
}

function readDocument(file: string, env: Env): unknown {
  return expandDeep(parseYaml(readFileSync(file, 'utf8')), env);
}

/** Loads the routing file at `path`. Throws only for errors that stop startup. */
export function loadRoutingFile(options: {
  path: ResolvedPath;
  env: Env;
  log: Logger;
  enableRoutewise: boolean;
  strategies: StrategyCatalogue;
}): RoutingFileState {
  const { path, log } = options;
  const file = path.path;
  if (path.overrideMessage) log.info({ path: file }, path.overrideMessage);
  if (path.source === 'env_legacy') log.warn({ setting: 'ROUTING_CONFIG' }, 'ROUTING_CONFIG is deprecated; rename it to ROUTING_CONFIG_PATH');
  let status: RoutingFileStatus = 'loaded';
  let config: RoutingFileConfig = DEFAULT_ROUTING_FILE;
  let failure: string | undefined;
  if (!existsSync(file)) {
    log.warn({ path: file }, `Routing config not found: ${file}; routing-file defaults apply`);
    status = 'not_found';
  } else {
    let outcome: ReturnType<typeof parseRoutingDocument>;
    try {
      outcome = parseRoutingDocument(readDocument(file, options.env), file, {
        warn: (message, fields) => log.warn({ path: file, ...fields }, message),
        info: (message, fields) => log.info({ path: file, ...fields }, message),
      });
    } catch (err) {
      outcome = { ok: false, reason: `${file}: not valid YAML: ${(err as Error).message}` };
    }
    if (outcome.ok) {
      config = outcome.config;
    } else {
      status = 'failed';
      failure = outcome.reason;
      log.error({ path: file, event: 'routing_manager_failed' }, `RoutingManager failed to initialize: ${outcome.reason}; registry weights apply`);
    }
  }
  const defaultRouter = resolveDefaultRouter({ fileRouter: config.default_router, file, enableRoutewise: options.enableRoutewise, strategies: options.strategies, log });
  if (status === 'loaded') {
    log.info({ path: file, default_router: defaultRouter, local: config.local_deployment.length, remote: config.remote_deployment.length }, `Routing config loaded from ${file}`);
  }
  return { status, source: file, config, defaultRouter, ...(failure ? { failure } : {}) };
}
