/**
 * Which file each configuration kind is read from (docs/registry.md): explicit environment
 * variable (canonical name beats the older one) > active manifest `paths:` > bundled default.
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

export type ConfigKind = 'models' | 'routing' | 'alerts';

export interface PathEnv {
  MODELS_CONFIG_PATH?: string | undefined;
  MODELS_CONFIG?: string | undefined;
  ROUTING_CONFIG_PATH?: string | undefined;
  ROUTING_CONFIG?: string | undefined;
  ALERTS_CONFIG_PATH?: string | undefined;
}

/** The active manifest's `paths:` and the directory its relative paths resolve against. */
export interface ActiveManifestPaths {
  dir: string;
  paths: Partial<Record<ConfigKind, string>>;
}

export interface ResolvedPath {
  path: string;
  source: 'env' | 'env_legacy' | 'manifest' | 'default';
  /** Set when an environment variable beat a manifest path: the explicit-override log line. */
  overrideMessage?: string;
}

/** The nearest directory at or above `start` holding a `package.json` (source and `dist/` alike). */
export function packageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json at or above ${start}`);
  }
}

/** Directory of the bundled example files (`config/` beside `package.json`). */
export const BUNDLED_CONFIG_DIR = join(packageRoot(__dirname), 'config');

const defaults: Record<ConfigKind, string> = {
  models: join(BUNDLED_CONFIG_DIR, 'models.yaml'),
  routing: join(BUNDLED_CONFIG_DIR, 'routing.yaml'),
  // Not shipped: its absence means built-in alert thresholds.
  alerts: join(BUNDLED_CONFIG_DIR, 'alerts.yaml'),
};

const envNames: Record<ConfigKind, { canonical: keyof PathEnv; legacy?: keyof PathEnv }> = {
  models: { canonical: 'MODELS_CONFIG_PATH', legacy: 'MODELS_CONFIG' },
  routing: { canonical: 'ROUTING_CONFIG_PATH', legacy: 'ROUTING_CONFIG' },
  alerts: { canonical: 'ALERTS_CONFIG_PATH' },
};

export function resolveConfigPath(kind: ConfigKind, env: PathEnv, options: { cwd: string; manifest?: ActiveManifestPaths }): ResolvedPath {
  const names = envNames[kind];
  const canonical = env[names.canonical]?.trim();
  const legacy = names.legacy ? env[names.legacy]?.trim() : undefined;
  const fromEnv = canonical || legacy;
  const manifestPath = options.manifest?.paths[kind];
  if (fromEnv) {
    const variable = canonical ? names.canonical : names.legacy!;
    const path = isAbsolute(fromEnv) ? fromEnv : resolve(options.cwd, fromEnv);
    const resolved: ResolvedPath = { path, source: canonical ? 'env' : 'env_legacy' };
    if (manifestPath) {
      resolved.overrideMessage = `Explicit override: ${variable}=${path} takes precedence over manifest paths.${kind}`;
    }
    return resolved;
  }
  if (manifestPath && options.manifest) {
    return { path: isAbsolute(manifestPath) ? manifestPath : resolve(options.manifest.dir, manifestPath), source: 'manifest' };
  }
  return { path: defaults[kind], source: 'default' };
}
