/**
 * The routing file's schema (docs/routing-file.md) and its normalisation: deprecated spellings,
 * entries whose endpoint expanded to nothing, and the validation that fails the whole file. Pure:
 * the document arrives parsed and expanded; messages go to the callbacks.
 */
import { z } from 'zod';

/** Blank or null means "not set", so `${UNSET}` or an empty key falls back to the default. */
const absentIfBlank = (v: unknown) => (v === null || (typeof v === 'string' && v.trim() === '') ? undefined : v);
/** A number that may arrive as a string after `${VAR}` expansion. */
const numeric = (inner: z.ZodNumber) => z.preprocess((v) => {
  const present = absentIfBlank(v);
  return typeof present === 'string' ? Number(present) : present;
}, inner.optional());

const endpoint = z.string().trim().refine((value) => {
  if (!/^https?:\/\//.test(value)) return false;
  try {
    return Boolean(new URL(value).host);
  } catch {
    return false;
  }
}, { message: "must start with 'http://' or 'https://' and be a URL" });

/** One `local_deployment` / `remote_deployment` entry; other keys of an entry are ignored. */
export const deploymentEntrySchema = z.object({
  /** Base URL compared exactly with a route's `base_url`; its origin + `/health` is probed (local only). */
  endpoint,
  /** Public model ids (or aliases) this endpoint serves; must not be empty (an empty list fails the whole file). */
  models: z.array(z.string().trim().min(1)).min(1, { message: 'must list at least one model' }),
}).loose();

export const routingFileSchema = z.object({
  /** Router for models that name none; the local/remote split runs only for `fixed`. Default `fixed`. */
  default_router: z.preprocess(absentIfBlank, z.string().trim().default('fixed')),
  /** Seconds a health probe may take (connection and answer). Default 2. */
  timeout: numeric(z.number().positive()).default(2),
  /** Seconds between health probes of local entries; 0 disables probing. Default 0. */
  health_check: numeric(z.number().min(0)).default(0),
  /** Endpoints treated as local. Default []. */
  local_deployment: z.preprocess(absentIfBlank, z.array(deploymentEntrySchema).default([])),
  /** Endpoints treated as remote. Default []. */
  remote_deployment: z.preprocess(absentIfBlank, z.array(deploymentEntrySchema).default([])),
  /** Free-form mapping, kept as given (no effect on the gateway). Default {}. */
  logging: z.preprocess(absentIfBlank, z.record(z.string(), z.unknown()).default({})),
  /** Share of traffic for the local group, from the deprecated `routing_parameter.local_fraction`. Default 0.5. */
  local_fraction: numeric(z.number().min(0).max(1)).default(0.5),
});

export type RoutingFileConfig = z.infer<typeof routingFileSchema>;
export type DeploymentEntry = z.infer<typeof deploymentEntrySchema>;

/** The built-in defaults of the routing file (what applies with no file or a file that failed). */
export const DEFAULT_ROUTING_FILE: RoutingFileConfig = routingFileSchema.parse({});

export interface ParseReporters {
  /** Deprecations and dropped entries (WARNING). */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Keys accepted without effect (INFO). */
  info(message: string, fields?: Record<string, unknown>): void;
}

export type ParseOutcome = { ok: true; config: RoutingFileConfig } | { ok: false; reason: string };

const KNOWN_KEYS = new Set(['default_router', 'timeout', 'health_check', 'local_deployment', 'remote_deployment', 'logging', 'routing_strategy', 'routing_parameter']);
const DEPLOYMENT_KEYS = ['local_deployment', 'remote_deployment'] as const;

/** Moves the deprecated spellings to their current keys, with one warning each. */
function normaliseDeprecated(doc: Record<string, unknown>, file: string, report: ParseReporters): Record<string, unknown> {
  const out: Record<string, unknown> = { ...doc };
  delete out.routing_strategy;
  delete out.routing_parameter;
  // Only the deprecated `routing_parameter` sets the local share; a top-level key has no effect.
  delete out.local_fraction;
  if (doc.routing_strategy !== undefined) {
    if (doc.default_router !== undefined) {
      report.warn(`${file}: 'routing_strategy' is deprecated and ignored because 'default_router' is also set`, { key: 'routing_strategy' });
    } else {
      report.warn(`${file}: 'routing_strategy' is deprecated; rename it to 'default_router'`, { key: 'routing_strategy' });
      out.default_router = doc.routing_strategy;
    }
  }
  const parameter = doc.routing_parameter;
  if (parameter !== undefined && parameter !== null) {
    report.warn(`${file}: 'routing_parameter' is deprecated; its 'local_fraction' still sets the local share of the split`, { key: 'routing_parameter' });
    if (typeof parameter === 'object' && !Array.isArray(parameter)) {
      for (const [key, value] of Object.entries(parameter)) {
        if (key === 'local_fraction') out.local_fraction = value;
        else report.info(`${file}: routing_parameter.${key} is accepted without effect`, { key: `routing_parameter.${key}` });
      }
    }
  }
  for (const key of Object.keys(doc)) {
    if (!KNOWN_KEYS.has(key)) report.info(`${file}: key '${key}' is accepted without effect`, { key });
  }
  return out;
}

/** Drops (alone, with a warning) each entry whose endpoint expanded to an empty string. */
function dropEmptyEndpoints(doc: Record<string, unknown>, file: string, report: ParseReporters): void {
  for (const key of DEPLOYMENT_KEYS) {
    const entries = doc[key];
    if (!Array.isArray(entries)) continue;
    doc[key] = entries.filter((entry: unknown, index) => {
      const value = entry !== null && typeof entry === 'object' ? (entry as { endpoint?: unknown }).endpoint : undefined;
      const empty = value === null || (typeof value === 'string' && value.trim() === '');
      if (empty) report.warn(`${file}: ${key}[${index}] dropped: its endpoint expanded to an empty value`, { key: `${key}[${index}]` });
      return !empty;
    });
  }
}

/**
 * Validates an expanded routing document. A failure (empty `models`, endpoint not http(s), a value
 * of the wrong type) fails the whole file: the caller logs `RoutingManager failed to initialize`.
 */
export function parseRoutingDocument(raw: unknown, file: string, report: ParseReporters): ParseOutcome {
  if (raw === null || raw === undefined) return { ok: true, config: DEFAULT_ROUTING_FILE };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: `${file}: the document must be a mapping` };
  const doc = normaliseDeprecated(raw as Record<string, unknown>, file, report);
  dropEmptyEndpoints(doc, file, report);
  const parsed = routingFileSchema.safeParse(doc);
  if (parsed.success) return { ok: true, config: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { ok: false, reason: `${file}: invalid '${issue.path.join('.') || '(document)'}': ${issue.message}` };
}
