/**
 * The alerts file (YAML): per-type rules and delivery settings. Its path resolves like the
 * models and routing files: `ALERTS_CONFIG_PATH` (against the working directory) > the active
 * manifest's `paths.alerts` (against the manifest's directory) > `config/alerts.yaml`, which is
 * not shipped, so by default the built-in thresholds apply. Every string at any depth expands
 * `${VAR}`, `${VAR:-default}` and embedded variables, like the routing file.
 *
 * A file that cannot be used (bad YAML, an unknown key, a bad value) never stops the gateway: the
 * problem is logged at ERROR naming the file and the key, the built-in thresholds apply, and
 * `GET /admin/alerts` shows the status `invalid` with the same message (docs/alerts.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Logger } from '../../../lib/logger';
import { manifestPaths, type DistributionState } from '../../registry/manifest';
import { resolveConfigPath, type PathEnv, type ResolvedPath } from '../../registry/paths';
import { expandDeep, type Env } from '../../routing-file/expand';
import { ALERT_TYPES, BUILT_IN_DELIVERY, BUILT_IN_RULES, type AlertRules, type AlertType, type DeliveryConfig } from './types';

/** Expanded values are strings: numbers and booleans are read from their text too. */
const numberText = (v: unknown): unknown => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);
const booleanText = (v: unknown): unknown => (v === 'true' ? true : v === 'false' ? false : v);
const seconds = () => z.preprocess(numberText, z.number().positive());
const count = () => z.preprocess(numberText, z.number().int().positive());

const ruleSchema = z.strictObject({
  enabled: z.preprocess(booleanText, z.boolean()).optional(),
  threshold: count().optional(),
  window: seconds().optional(),
  cooldown: z.preprocess(numberText, z.number().min(0)).optional(),
});

const fileSchema = z.strictObject({
  rules: z.strictObject(Object.fromEntries(ALERT_TYPES.map((t) => [t, ruleSchema.nullish()])) as Record<AlertType, z.ZodOptional<z.ZodNullable<typeof ruleSchema>>>).nullish(),
  delivery: z.strictObject({
    timeout: seconds().optional(),
    retry_window: seconds().optional(),
    queue_limit: count().optional(),
  }).nullish(),
});

export type AlertsFileStatus = 'loaded' | 'built_in' | 'not_found' | 'invalid';

/** The alerts configuration as the engine applies it. */
export interface AlertsConfig {
  status: AlertsFileStatus;
  /** The resolved path, whether or not it exists. */
  path: string;
  source: ResolvedPath['source'];
  rules: AlertRules;
  delivery: DeliveryConfig;
  /** Why the file was not used (status `invalid`). */
  problem?: string;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const at = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') return `unknown key ${issue.keys.map((k) => `'${at ? `${at}.` : ''}${k}'`).join(', ')}`;
  return `'${at || '(document)'}': ${issue.message}`;
}

/** Parses an (already expanded) alerts document; throws an Error naming the first bad key. */
export function parseAlertsDocument(doc: unknown): Pick<AlertsConfig, 'rules' | 'delivery'> {
  const parsed = fileSchema.safeParse(doc ?? {});
  if (!parsed.success) throw new Error(parsed.error.issues.map(describeIssue).join('; '));
  const rules = Object.fromEntries(ALERT_TYPES.map((t) => [t, { ...BUILT_IN_RULES[t], ...stripUndefined(parsed.data.rules?.[t] ?? {}) }])) as AlertRules;
  const d = parsed.data.delivery ?? {};
  const delivery: DeliveryConfig = {
    timeout: d.timeout ?? BUILT_IN_DELIVERY.timeout,
    retryWindow: d.retry_window ?? BUILT_IN_DELIVERY.retryWindow,
    queueLimit: d.queue_limit ?? BUILT_IN_DELIVERY.queueLimit,
  };
  return { rules, delivery };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Reads the alerts file at `path`; never throws. */
export function loadAlertsFile(path: ResolvedPath, env: Env, log: Logger): AlertsConfig {
  const base = { path: path.path, source: path.source };
  const builtIn = { rules: BUILT_IN_RULES, delivery: BUILT_IN_DELIVERY };
  if (path.overrideMessage) log.info({ path: path.path }, path.overrideMessage);
  if (!existsSync(path.path)) {
    if (path.source === 'default') return { ...base, ...builtIn, status: 'built_in' };
    log.warn({ event: 'alerts_config_not_found', path: path.path }, `Alerts config not found: ${path.path}; built-in alert thresholds apply`);
    return { ...base, ...builtIn, status: 'not_found' };
  }
  try {
    const doc = expandDeep(parseYaml(readFileSync(path.path, 'utf8')), env);
    const config: AlertsConfig = { ...base, ...parseAlertsDocument(doc), status: 'loaded' };
    log.info({ event: 'alerts_config_loaded', path: path.path }, `Alert rules loaded from ${path.path}`);
    return config;
  } catch (err) {
    const problem = `${path.path}: ${(err as Error).message}`;
    log.error({ event: 'alerts_config_invalid', path: path.path, problem }, `Alerts config not used (${problem}); built-in alert thresholds apply`);
    return { ...base, ...builtIn, status: 'invalid', problem };
  }
}

/** Resolves the alerts file (environment > active manifest > unshipped default) and reads it. */
export function loadAlertsConfig(options: { pathEnv: PathEnv; env: Env; cwd: string; log: Logger; distribution: DistributionState }): AlertsConfig {
  const manifest = manifestPaths(options.distribution);
  const path = resolveConfigPath('alerts', options.pathEnv, { cwd: options.cwd, ...(manifest ? { manifest } : {}) });
  return loadAlertsFile(path, options.env, options.log);
}
