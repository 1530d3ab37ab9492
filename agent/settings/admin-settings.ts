/**
 * The agent platform's admin settings (`GET, PUT /admin/agent/settings`, secrets write-only;
 * docs/agent-admin.md "Settings"): which keys exist, how each is validated, what it defaults to
 * (the environment), and how a change is saved (one transaction with its audit row).
 *
 * A plain setting is stored as JSON; a credential field is sealed with
 * `AGENT_SETTINGS_ENCRYPTION_KEY` (lib/sealed-secret.ts) and never leaves the server again: readers
 * see only whether it is configured. For a credential an empty string keeps the saved value and
 * `null` clears it; for a plain setting `null` returns it to its default.
 */
import { z } from 'zod';
import type { Knex } from 'knex';
import { AppError } from '../../lib/errors';
import type { Settings } from '../../lib/settings';
import type { SecretSealer } from '../../lib/sealed-secret';
import { recordAudit, type AuditAction, type AuditBy, type AuditCategory } from '../audit/audit-log';
import { parseAllowlist } from '../jobs/entitlement';
import { HOST_SETTING_DEFINITIONS, RETIRED_HOST_SETTINGS } from './host-settings';

/** An http(s) URL without credentials in it, at most 2,048 characters. */
const httpUrl = z.string().max(2048).refine((text) => {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) URL without user or password in it');

const allowlistEntry = z.string().min(1).max(512).regex(/^\S+$/, 'must not contain spaces').refine((s) => !s.includes(','), 'must not contain commas');

/** A setting stored as JSON; `null` in a PUT returns it to its default. */
export interface PlainDefinition<T> {
  credential: false;
  schema: z.ZodType<T>;
  /** The value without a saved one: the environment's (or the built-in default). */
  fallback: (env: Settings) => T;
}

export interface CredentialDefinition {
  credential: true;
  schema: z.ZodType<string>;
}

/** Every admin setting. A new key: add it here, document it in docs/agent-admin.md, and read it through `AgentSettings.current`. */
export const SETTING_DEFINITIONS = {
  /** Repositories jobs may name (exact `owner/name` or URL, or a URL prefix ending in `/`); replaces `AGENT_REPO_ALLOWLIST`. */
  repo_allowlist: {
    credential: false, schema: z.array(allowlistEntry).max(1000), fallback: (env) => parseAllowlist(env.AGENT_REPO_ALLOWLIST),
  } satisfies PlainDefinition<string[]>,
  /** Largest workspace download before compression, MiB (default 1024). */
  workspace_download_max_mib: {
    credential: false, schema: z.number().int().min(1).max(1024 * 1024), fallback: (env) => env.WORKSPACE_DOWNLOAD_MAX_MIB,
  } satisfies PlainDefinition<number>,
  /** Generate titles for new chats (docs/agent-api.md "Titles"). */
  title_generation_enabled: {
    credential: false, schema: z.boolean(), fallback: (env) => env.AGENT_TITLE_GENERATION_ENABLED,
  } satisfies PlainDefinition<boolean>,
  /** Deadline of one prompt rewrite, seconds (default 90). */
  prompt_rewrite_deadline_seconds: {
    credential: false, schema: z.number().positive().max(600), fallback: (env) => env.AGENT_PROMPT_REWRITE_DEADLINE_SECONDS,
  } satisfies PlainDefinition<number>,
  /** The gateway the control plane dispatches grants to and calls for titles and rewrites; bound to the dispatch token's origin. */
  gateway_api_url: {
    credential: false, schema: httpUrl, fallback: (env) => env.AGENT_GATEWAY_URL,
  } satisfies PlainDefinition<string>,
  /** The private URL of the database admin tool behind `/api/admin/agent/pgadmin/` (none by default). */
  database_tool_url: {
    credential: false, schema: httpUrl.nullable(), fallback: () => null,
  } satisfies PlainDefinition<string | null>,
  /** The database tool's initial administrator password (at least 12 characters). Write-only. */
  database_tool_password: {
    credential: true, schema: z.string().min(12, 'must be at least 12 characters').max(256),
  } satisfies CredentialDefinition,
} as const;

export type SettingKey = keyof typeof SETTING_DEFINITIONS;
export const SETTING_KEYS = Object.keys(SETTING_DEFINITIONS) as SettingKey[];

/**
 * Every key the `agent_settings` table may hold: the admin settings and the host settings
 * (host-settings.ts), one namespace, one change marker, one sync. Each route accepts only its own.
 */
export const STORED_SETTING_DEFINITIONS = { ...SETTING_DEFINITIONS, ...HOST_SETTING_DEFINITIONS };
export type StoredSettingKey = keyof typeof STORED_SETTING_DEFINITIONS;
const STORED_KEYS = Object.keys(STORED_SETTING_DEFINITIONS) as StoredSettingKey[];

type Defs = typeof STORED_SETTING_DEFINITIONS;
/** The effective value of every stored setting (a credential: its plaintext, or null when not configured). */
export type SettingValues = {
  [K in StoredSettingKey]: Defs[K] extends PlainDefinition<infer T> ? T : string | null;
};

export function isCredential(key: StoredSettingKey): boolean {
  return STORED_SETTING_DEFINITIONS[key].credential;
}

/** Values with nothing saved. */
export function defaultValues(env: Settings): SettingValues {
  const values: Record<string, unknown> = {};
  for (const key of STORED_KEYS) {
    const def = STORED_SETTING_DEFINITIONS[key];
    values[key] = def.credential ? null : def.fallback(env);
  }
  return values as SettingValues;
}

/** A saved row as read. */
export interface StoredSetting {
  key: string;
  value: unknown;
  sealed: string | null;
  updated_at: Date | string;
}

export async function readStoredSettings(db: Knex | Knex.Transaction): Promise<{ revision: string; rows: StoredSetting[] }> {
  const state = await db('agent_settings_state').first<{ revision: string | number } | undefined>('revision');
  const rows = await db('agent_settings').select<StoredSetting[]>('key', 'value', 'sealed', 'updated_at').orderBy('key');
  return { revision: String(state?.revision ?? 0), rows };
}

export async function readRevision(db: Knex): Promise<string> {
  const state = await db('agent_settings_state').first<{ revision: string | number } | undefined>('revision');
  return String(state?.revision ?? 0);
}

/** What a stored row means under this version's rules: a value, or why it cannot apply. */
export function decodeStored(row: StoredSetting, sealer: SecretSealer | undefined): { key: StoredSettingKey; value: unknown } | { problem: string } {
  if (Object.hasOwn(RETIRED_HOST_SETTINGS, row.key)) return { problem: `${row.key}: ${RETIRED_HOST_SETTINGS[row.key]}` };
  if (!(row.key in STORED_SETTING_DEFINITIONS)) return { problem: `${row.key}: not a setting this version knows` };
  const key = row.key as StoredSettingKey;
  const def = STORED_SETTING_DEFINITIONS[key];
  if (def.credential) {
    if (row.sealed === null) return { problem: `${key}: a credential stored without encryption` };
    if (!sealer) return { problem: `${key}: AGENT_SETTINGS_ENCRYPTION_KEY is not configured in this process` };
    let plain: string;
    try {
      plain = sealer.open(key, row.sealed);
    } catch (err) {
      return { problem: (err as Error).message };
    }
    const parsed = def.schema.safeParse(plain);
    return parsed.success ? { key, value: parsed.data } : { problem: `${key}: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
  }
  const parsed = (def.schema as z.ZodType).safeParse(row.value);
  return parsed.success ? { key, value: parsed.data } : { problem: `${key}: ${parsed.error.issues[0]?.message ?? 'invalid'} (stored ${JSON.stringify(row.value).slice(0, 200)})` };
}

/**
 * The PUT body: `{settings: {<key>: <value>}}`, partial, over `definitions` (the admin settings by
 * default; the host settings on their route). Unknown keys and bad values are 400s naming
 * `settings.<key>`; a key of `retired` (a former setting) is the same 400 with the reason it was removed.
 */
export function parseSettingsPatch<K extends StoredSettingKey = SettingKey>(
  body: unknown, definitions: Readonly<Record<K, PlainDefinition<unknown> | CredentialDefinition>> = SETTING_DEFINITIONS as never,
  retired: Readonly<Record<string, string>> = {},
): Partial<Record<K, unknown>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('invalid_request', 'Invalid request body: expected {"settings": {<key>: <value>}}');
  for (const field of Object.keys(body)) {
    if (field !== 'settings') throw new AppError('invalid_request', `Invalid field '${field}': unknown field (the body is {"settings": {...}})`, { param: field });
  }
  const settings = (body as { settings?: unknown }).settings;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new AppError('invalid_request', 'Invalid field \'settings\': expected an object of settings', { param: 'settings' });
  }
  const patch: Partial<Record<K, unknown>> = {};
  for (const [key, value] of Object.entries(settings as Record<string, unknown>)) {
    const param = `settings.${key}`;
    if (Object.hasOwn(retired, key)) throw new AppError('invalid_request', `Invalid field '${param}': no longer a setting (${retired[key]})`, { param });
    if (!Object.hasOwn(definitions, key)) {
      throw new AppError('invalid_request', `Invalid field '${param}': unknown setting (known: ${Object.keys(definitions).join(', ')})`, { param });
    }
    const def = definitions[key as K];
    if (value === null || (def.credential && value === '')) {
      patch[key as K] = value;
      continue;
    }
    const parsed = (def.schema as z.ZodType).safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const at = issue.path.length > 0 ? `[${issue.path.join('.')}]` : '';
      throw new AppError('invalid_request', `Invalid field '${param}${at}': ${issue.message}`, { param });
    }
    patch[key as K] = parsed.data;
  }
  return patch;
}

/**
 * The dispatch token (`GATEWAY_GRANT_DISPATCH_TOKEN`, set in the environment) is bound to the
 * gateway API URL's origin: a saved `gateway_api_url` may change the path, never the
 * origin the token was configured for.
 */
export function assertGatewayOriginKept(next: string, env: Settings): void {
  const bound = new URL(env.AGENT_GATEWAY_URL).origin;
  if (new URL(next).origin !== bound) {
    throw new AppError('invalid_request', `Invalid field 'settings.gateway_api_url': the grant dispatch token is bound to ${bound}; moving the gateway API URL to another origin needs a new token: change AGENT_GATEWAY_URL and GATEWAY_GRANT_DISPATCH_TOKEN together in the environment`, { param: 'settings.gateway_api_url' });
  }
}

export interface SaveResult {
  revision: string;
  changed: StoredSettingKey[];
}

/**
 * Saves a validated patch in one transaction: the marker row is locked (saves are serialized), the
 * rows change, the marker's revision increments when anything changed, and the audit row
 * (`agent.settings.update`, category `settings`, target `settings`/`agent`, unless `audit` names
 * the action that saved them) commits with them. Credential values never reach the audit row: it
 * says `replaced` or `cleared`.
 */
export async function saveSettings(
  db: Knex, patch: Partial<Record<StoredSettingKey, unknown>>,
  options: {
    env: Settings; sealer: SecretSealer | undefined; by: AuditBy;
    audit?: { category: AuditCategory; action: AuditAction; target?: { type: string; id: string } };
  },
): Promise<SaveResult> {
  const wantsSecret = Object.entries(patch).some(([key, value]) => isCredential(key as StoredSettingKey) && typeof value === 'string' && value !== '');
  if (wantsSecret && !options.sealer) {
    throw new AppError('service_unavailable', 'Credential settings cannot be saved: AGENT_SETTINGS_ENCRYPTION_KEY is not configured on the control-plane API');
  }
  if (typeof patch.gateway_api_url === 'string') assertGatewayOriginKept(patch.gateway_api_url, options.env);
  return db.transaction(async (trx) => {
    await trx('agent_settings_state').insert({ singleton: true, revision: 0 }).onConflict('singleton').ignore();
    const state = await trx('agent_settings_state').forUpdate().first<{ revision: string | number }>('revision');
    const rows = new Map((await trx('agent_settings').select<StoredSetting[]>('key', 'value', 'sealed', 'updated_at')).map((r) => [r.key, r]));
    const changed: StoredSettingKey[] = [];
    const before: Record<string, unknown> = {};
    const after: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(patch)) {
      const key = name as StoredSettingKey;
      const saved = rows.get(key);
      if (isCredential(key)) {
        if (value === '') continue;
        if (value === null) {
          if (!saved) continue;
          await trx('agent_settings').where({ key }).delete();
          before[key] = 'configured';
          after[key] = 'cleared';
        } else {
          const sealed = options.sealer!.seal(key, value as string);
          await trx('agent_settings').insert({ key, value: null, sealed, updated_at: trx.fn.now() }).onConflict('key').merge();
          before[key] = saved ? 'configured' : 'not configured';
          after[key] = 'replaced';
        }
        changed.push(key);
        continue;
      }
      const previous = saved ? saved.value : undefined;
      if (value === null) {
        if (!saved) continue;
        await trx('agent_settings').where({ key }).delete();
        before[key] = previous;
        after[key] = 'default';
      } else {
        if (saved && JSON.stringify(previous) === JSON.stringify(value)) continue;
        await trx('agent_settings').insert({ key, value: JSON.stringify(value), sealed: null, updated_at: trx.fn.now() }).onConflict('key').merge();
        before[key] = saved ? previous : 'default';
        after[key] = value;
      }
      changed.push(key);
    }
    let revision = String(state?.revision ?? 0);
    if (changed.length > 0) {
      const [next] = await trx('agent_settings_state').update({ revision: trx.raw('revision + 1'), updated_at: trx.fn.now() }).returning<Array<{ revision: string | number }>>('revision');
      revision = String(next?.revision ?? revision);
    }
    const audit = options.audit ?? { category: 'settings', action: 'agent.settings.update' };
    await recordAudit(trx, {
      ...options.by, category: audit.category, action: audit.action, target: audit.target ?? { type: 'settings', id: 'agent' }, outcome: 'succeeded',
      details: { changed, before, after, revision },
    });
    return { revision, changed };
  });
}
