/**
 * Settings sync (every 5 seconds; docs/agent-admin.md "Settings"): each
 * process that uses admin settings holds their effective values in memory and polls the change
 * marker (`agent_settings_state.revision`, one primary-key read) every
 * `AGENT_SETTINGS_SYNC_SECONDS` (default 2); when it moved, every saved row is read again and
 * applied. A change therefore reaches every process within 5 seconds.
 *
 * A saved value that cannot apply (unknown key, invalid under this version's rules, a credential
 * the configured key cannot open) is logged at WARNING as `saved setting not applied as stored:
 * <key>: <why>` and that key keeps its last good value (its default at start). A database that
 * cannot be read keeps everything as it was and is tried again on the next tick.
 *
 * `liveSettings` gives code that reads the environment's `Settings` the synced values for the
 * variables a setting replaces, so a consumer that reads `settings.X` per request follows changes
 * without knowing about the sync.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../lib/logger';
import type { Settings } from '../../lib/settings';
import { SecretSealer } from '../../lib/sealed-secret';
import { decodeStored, defaultValues, readRevision, readStoredSettings, type SettingValues, type StoredSettingKey } from './admin-settings';

export interface SavedMeta {
  /** When the saved value was written; null when the key has its default. */
  updatedAt: string | null;
}

export class AgentSettings {
  private values: SettingValues;
  private meta = new Map<StoredSettingKey, SavedMeta>();
  private revision: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  readonly sealer: SecretSealer | undefined;

  constructor(private readonly db: Knex, readonly env: Settings, private readonly log: Logger) {
    this.values = defaultValues(env);
    this.sealer = env.AGENT_SETTINGS_ENCRYPTION_KEY ? new SecretSealer(env.AGENT_SETTINGS_ENCRYPTION_KEY) : undefined;
  }

  /** The effective values now (memory only). */
  get current(): Readonly<SettingValues> {
    return this.values;
  }

  /** The revision applied last (undefined before the first successful read). */
  get appliedRevision(): string | undefined {
    return this.revision;
  }

  savedMeta(key: StoredSettingKey): SavedMeta {
    return this.meta.get(key) ?? { updatedAt: null };
  }

  /** Reads the saved settings now when the marker moved (or always with `force`). Concurrent calls share one read. */
  refresh(force = false): Promise<void> {
    this.refreshing ??= this.read(force).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async read(force: boolean): Promise<void> {
    if (!force && this.revision !== undefined && (await readRevision(this.db)) === this.revision) return;
    const { revision, rows } = await readStoredSettings(this.db);
    const next: Record<string, unknown> = { ...defaultValues(this.env) };
    const meta = new Map<StoredSettingKey, SavedMeta>();
    for (const row of rows) {
      const decoded = decodeStored(row, this.sealer);
      if ('problem' in decoded) {
        this.log.warn({ event: 'agent_setting_not_applied', key: row.key.slice(0, 64) }, `saved setting not applied as stored: ${decoded.problem}`);
        // The last good value stays (the default when none applied before).
        if (row.key in next) next[row.key] = this.values[row.key as StoredSettingKey];
        continue;
      }
      next[decoded.key] = decoded.value;
      meta.set(decoded.key, { updatedAt: new Date(row.updated_at).toISOString() });
    }
    this.values = Object.freeze(next) as SettingValues;
    this.meta = meta;
    if (this.revision !== revision) this.log.info({ event: 'agent_settings_applied', revision }, 'admin settings applied');
    this.revision = revision;
  }

  /** First read (a failure is logged: the defaults apply until the database answers), then a poll every `AGENT_SETTINGS_SYNC_SECONDS`. */
  async start(): Promise<void> {
    if (this.timer) return;
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.env.AGENT_SETTINGS_SYNC_SECONDS * 1000);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      await this.refresh();
    } catch (err) {
      this.log.warn({ err }, 'admin settings could not be read; keeping the last values and retrying');
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** The environment variables a setting replaces, and how the setting's value reads as that variable. */
const LIVE_VARIABLES = {
  AGENT_REPO_ALLOWLIST: (v: SettingValues) => v.repo_allowlist.join(','),
  WORKSPACE_DOWNLOAD_MAX_MIB: (v: SettingValues) => v.workspace_download_max_mib,
  AGENT_TITLE_GENERATION_ENABLED: (v: SettingValues) => v.title_generation_enabled,
  AGENT_PROMPT_REWRITE_DEADLINE_SECONDS: (v: SettingValues) => v.prompt_rewrite_deadline_seconds,
  AGENT_GATEWAY_URL: (v: SettingValues) => v.gateway_api_url,
  // Host settings (host-settings.ts): chats whose workflow starts afterwards, and the attempt context's fallback.
  AGENT_TURN_TIME_LIMIT_SECONDS: (v: SettingValues) => v.turn_time_limit_seconds,
  AGENT_SANDBOX_MEMORY_BYTES: (v: SettingValues) => v.container_memory_mib * 1024 * 1024,
  AGENT_SANDBOX_CPUS: (v: SettingValues) => v.container_cpus,
} satisfies Partial<{ [K in keyof Settings]: (v: SettingValues) => Settings[K] }>;

/** `env` whose variables replaced by a setting read the synced value each time they are read. */
export function liveSettings(env: Settings, settings: AgentSettings): Settings {
  const live = { ...env };
  for (const [name, read] of Object.entries(LIVE_VARIABLES)) {
    Object.defineProperty(live, name, { enumerable: true, get: () => (read as (v: SettingValues) => unknown)(settings.current) });
  }
  return Object.freeze(live);
}
