/**
 * The distribution manifest (docs/registry.md "Distribution manifest"): one YAML document, no
 * secrets, no interpolation. `schema_version` must be 1; unknown keys at the top level and under
 * `features` are rejected; other sections ignore unknown keys. Activation by
 * `DISTRIBUTION_CONFIG_MODE`: `dark` (default) validates and logs only; `active` applies it (its
 * `paths:` feed registry path resolution). An active manifest that fails to load is logged CRITICAL
 * and the gateway serves no models; any other mode value, an empty one, or `active` without a path
 * is a misconfiguration (one warning).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Logger } from '../../lib/logger';
import { readBranding, type Branding } from './branding';
import type { ActiveManifestPaths } from './paths';

const manifestSchema = z.object({
  schema_version: z.literal(1),
  distribution: z.object({ id: z.string().optional(), display_name: z.string().optional(), release: z.string().optional() }).loose().optional(),
  site: z.object({
    public_base_url: z.string().optional(), support_email: z.string().optional(), branding: z.string().optional(),
    terms_document: z.string().optional(), privacy_document: z.string().optional(),
  }).loose().optional(),
  features: z.object({
    routers: z.array(z.string()).optional(), public_signup: z.boolean().optional(), rag: z.boolean().optional(), public_stats: z.boolean().optional(),
  }).strict().optional(),
  paths: z.object({ models: z.string().optional(), routing: z.string().optional(), alerts: z.string().optional(), mcp: z.string().optional() }).loose().optional(),
  deployment: z.object({ target: z.string().optional() }).loose().optional(),
}).strict();

export type Manifest = z.infer<typeof manifestSchema>;

export type DistributionState =
  | { status: 'none' }
  | { status: 'dark'; manifest: Manifest | undefined }
  /** `branding`: the validated document named by `site.branding` (absent when it names none). */
  | { status: 'active'; manifest: Manifest; dir: string; branding?: Branding | undefined }
  /** Active, but the file did not load: the gateway serves no models. */
  | { status: 'failed'; error: string }
  /** A mode other than `dark`/`active`, an empty mode, or `active` without a path. */
  | { status: 'misconfigured'; reason: string };

/** Parses a manifest file; throws with the file and the failing key. */
export function readManifest(path: string): Manifest {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = manifestSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.join('.') || '(document)';
    const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    throw new Error(`${path}: ${where}: ${issue.message}${keys}`);
  }
  return parsed.data;
}

/**
 * The manifest's branding document (`site.branding`, relative to the manifest's directory), read
 * and validated; throws naming the file and the key, so an invalid document fails the manifest.
 */
function brandingOf(manifest: Manifest, dir: string): Branding | undefined {
  const path = manifest.site?.branding;
  return path ? readBranding(resolve(dir, path)) : undefined;
}

/**
 * The distribution's state from its settings. An active manifest whose file or branding document
 * is invalid is `failed` (logged CRITICAL, no models); in dark mode either only logs a warning.
 */
export function loadDistribution(options: { path: string | undefined; mode: string | undefined; cwd: string; log: Logger }): DistributionState {
  const { log } = options;
  const mode = options.mode ?? 'dark';
  if (mode !== 'dark' && mode !== 'active') {
    const reason = `DISTRIBUTION_CONFIG_MODE must be exactly 'dark' or 'active' (got ${JSON.stringify(mode)})`;
    log.warn({ event: 'distribution_misconfigured' }, `${reason}: sign-up is closed and /site-config answers 503`);
    return { status: 'misconfigured', reason };
  }
  if (!options.path) {
    if (mode === 'dark') return { status: 'none' };
    const reason = 'DISTRIBUTION_CONFIG_MODE=active needs DISTRIBUTION_CONFIG_PATH';
    log.warn({ event: 'distribution_misconfigured' }, `${reason}: sign-up is closed and /site-config answers 503`);
    return { status: 'misconfigured', reason };
  }
  const file = resolve(options.cwd, options.path);
  try {
    const manifest = readManifest(file);
    if (mode === 'dark') {
      try {
        brandingOf(manifest, dirname(file));
        log.info({ path: file }, `Distribution manifest ${file} is valid (dark mode: not applied)`);
      } catch (err) {
        log.warn({ path: file, event: 'branding_invalid' }, `Distribution manifest ${file}: ${(err as Error).message} (dark mode: not applied)`);
      }
      return { status: 'dark', manifest };
    }
    const branding = brandingOf(manifest, dirname(file));
    log.info({ path: file }, `Distribution manifest ${file} is active`);
    return { status: 'active', manifest, dir: dirname(file), branding };
  } catch (err) {
    const error = (err as Error).message;
    if (mode === 'dark') {
      log.warn({ path: file }, `Distribution manifest is invalid (dark mode: not applied): ${error}`);
      return { status: 'dark', manifest: undefined };
    }
    log.fatal({ event: 'distribution_manifest_failed', path: file }, `CRITICAL: active distribution manifest failed to load; serving no models: ${error}`);
    return { status: 'failed', error };
  }
}

/** The overlay layout's files: a distribution directory holds its manifest and these (docs/site-config.md). */
export const OVERLAY_FILES = { models: 'config/models.yaml', routing: 'config/routing.yaml' } as const;

/**
 * The `paths:` of an active manifest, for registry path resolution. A kind the manifest does not
 * name falls back to the overlay layout's file beside the manifest when that file exists, so a
 * distribution directory laid out as the overlay needs no `paths:` at all.
 */
export function manifestPaths(state: DistributionState): ActiveManifestPaths | undefined {
  if (state.status !== 'active') return undefined;
  const { alerts } = state.manifest.paths ?? {};
  const overlay = (kind: keyof typeof OVERLAY_FILES): string | undefined =>
    state.manifest.paths?.[kind] || (existsSync(resolve(state.dir, OVERLAY_FILES[kind])) ? OVERLAY_FILES[kind] : undefined);
  const models = overlay('models');
  const routing = overlay('routing');
  return { dir: state.dir, paths: { ...(models ? { models } : {}), ...(routing ? { routing } : {}), ...(alerts ? { alerts } : {}) } };
}
