/**
 * Loads the models file into a {@link Registry} with its documented log lines (docs/registry.md): a
 * missing file is a warning and no models; unset `${VAR}`s skip models (or optional routes); a bad
 * route label stops loading at that model; configuration errors stop startup; alias collisions
 * resolve to the model loaded last; `Registered N routes from <path>`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { Logger } from '../../lib/logger';
import { buildModel, type BuildContext } from './model-builder';
import { RegistryConfigError, RegistryStopError } from './errors';
import type { ResolvedPath } from './paths';
import type { Model, Registry } from './types';

export interface LoadRegistryOptions extends Omit<BuildContext, 'file' | 'warn'> {
  path: ResolvedPath;
  log: Logger;
}

/** The registry with no models (a missing or empty file). */
export function emptyRegistry(source: string): Registry {
  return { source, models: [], byName: new Map(), routesConfigured: 0 };
}

function readModelsList(file: string): unknown[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new RegistryConfigError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return [];
  const models = (doc as { models?: unknown }).models;
  if (models === undefined || models === null) return [];
  if (!Array.isArray(models)) throw new RegistryConfigError(`${file}: 'models' must be a list`);
  return models;
}

/** Builds the name index; an alias or id used twice resolves to the model loaded last (warning). */
function indexModels(models: readonly Model[], log: Logger): Map<string, Model> {
  const byName = new Map<string, Model>();
  for (const model of models) {
    for (const name of [model.id, ...model.aliases]) {
      const previous = byName.get(name);
      if (previous && previous !== model) {
        log.warn({ name, previous: previous.id, model: model.id }, `Model name '${name}' of ${model.id} collides with ${previous.id}; it now resolves to ${model.id} (loaded last)`);
      }
      byName.set(name, model);
    }
  }
  return byName;
}

export function loadRegistry(options: LoadRegistryOptions): Registry {
  const { path, log } = options;
  if (path.overrideMessage) log.info({ path: path.path }, path.overrideMessage);
  if (!existsSync(path.path)) {
    log.warn({ path: path.path }, `Models config not found: ${path.path}`);
    return emptyRegistry(path.path);
  }
  const ctx: BuildContext = { ...options, file: path.path, warn: (message, fields) => log.warn(fields, message) };
  const models: Model[] = [];
  const entries = readModelsList(path.path);
  for (const [position, raw] of entries.entries()) {
    try {
      const outcome = buildModel(raw, position, ctx);
      if ('model' in outcome) models.push(outcome.model);
      else log.warn({ variable: outcome.variable || undefined }, outcome.skipped);
    } catch (err) {
      if (!(err instanceof RegistryStopError)) throw err;
      log.warn({ path: path.path }, `Failed to load models file ${path.path}: ${err.message}; only the ${models.length} model(s) before it are loaded`);
      break;
    }
  }
  const byName = indexModels(models, log);
  const distinct = new Set(byName.values());
  const kept = models.filter((m) => distinct.has(m));
  const registry: Registry = { source: path.path, models: kept, byName, routesConfigured: byName.size };
  log.info({ path: path.path, models: kept.length }, `Registered ${registry.routesConfigured} routes from ${path.path}`);
  if (kept.length === 0) {
    log.warn({ path: path.path }, path.source === 'default'
      ? 'No models are available: the bundled example registry needs AGGREGATOR_API_KEY (or configure MODELS_CONFIG_PATH)'
      : `No models are available from ${path.path}`);
  }
  return registry;
}
