/**
 * Runtime settings (`site_settings` rows: key → JSON value), read by the hot path from memory.
 * Every process reloads all rows every few seconds (settings sync every 5 seconds), and
 * a write through {@link SiteSettings.write} is visible in the writing process at once.
 * Without a database the cache stays empty and every read gives the fallback.
 *
 * Each read has a budget of {@link SETTINGS_READ_BUDGET_MS}: a read that fails or takes longer
 * (the query is cancelled) leaves the values as they were but marks them not current, which closes
 * sign-up (its switch could not be read, docs/identity.md) until the next read, 5 seconds later,
 * answers in time.
 */
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { Periodic } from '../../lib/periodic';

/** How long one read of the settings may take before it counts as unreadable. */
export const SETTINGS_READ_BUDGET_MS = 1000;

export class SiteSettings {
  private values = new Map<string, unknown>();
  private readonly periodic: Periodic;
  private loaded = false;
  private lastReadOk = false;

  constructor(private readonly db: Db | null, private readonly log: Logger, refreshMs = 5000) {
    this.periodic = new Periodic(() => this.refresh(), refreshMs, log, 'site settings refresh');
  }

  /** Whether the rows have been read at least once. */
  get ready(): boolean {
    return this.loaded;
  }

  /** Whether the latest read answered within the budget (false before the first read). */
  get current(): boolean {
    return this.lastReadOk;
  }

  /** The stored value of `key`, or undefined. */
  get(key: string): unknown {
    return this.values.get(key);
  }

  /** A boolean setting: the stored value when it is a boolean, else `fallback`. */
  flag(key: string, fallback: boolean): boolean {
    const value = this.values.get(key);
    return typeof value === 'boolean' ? value : fallback;
  }

  /** Keys starting with `prefix`, with their values. */
  withPrefix(prefix: string): Array<[string, unknown]> {
    return [...this.values].filter(([key]) => key.startsWith(prefix));
  }

  /** Reads every row now (throws when the database does not answer within the budget). */
  async refresh(): Promise<void> {
    if (!this.db) return;
    let rows: Array<{ key: string; value: unknown }>;
    try {
      rows = await this.db('site_settings').select<Array<{ key: string; value: unknown }>>('key', 'value')
        .timeout(SETTINGS_READ_BUDGET_MS, { cancel: true });
    } catch (err) {
      if (this.lastReadOk) this.log.warn({ err, event: 'site_settings_unreadable' }, `Runtime settings could not be read within ${SETTINGS_READ_BUDGET_MS} ms; sign-up is closed until they are`);
      this.lastReadOk = false;
      throw err;
    }
    this.values = new Map(rows.map((r) => [r.key, r.value]));
    if (!this.lastReadOk && this.loaded) this.log.info({ event: 'site_settings_readable' }, 'Runtime settings readable again');
    this.loaded = true;
    this.lastReadOk = true;
  }

  /** Loads now, then every `refreshMs` in the background (failures, the first included, are logged and retried). */
  async start(): Promise<void> {
    if (this.db) await this.periodic.start({ retryFirst: true });
  }

  stop(): void {
    this.periodic.stop();
  }

  /** Stores `value` under `key` (null deletes) and applies it in this process at once. */
  async write(key: string, value: unknown): Promise<void> {
    if (!this.db) throw new Error('site settings need a database');
    if (value === null || value === undefined) {
      await this.db('site_settings').where({ key }).delete();
      this.values.delete(key);
      return;
    }
    await this.db('site_settings')
      .insert({ key, value: JSON.stringify(value), updated_at: this.db.fn.now() })
      .onConflict('key')
      .merge(['value', 'updated_at']);
    this.values.set(key, value);
  }
}
