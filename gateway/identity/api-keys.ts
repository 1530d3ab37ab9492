/**
 * The gateway's API key cache: inference authenticates from an in-memory map from key digest to
 * key state (owner, owner's role, expiry, revocation, suspension), so the hot path never queries
 * the database. The cache loads every key when the database answers, then every
 * `AUTH_KEY_REFRESH_SECONDS` reads only rows changed since its last read (keys or their owners),
 * and changes made through this process apply at once. The keys themselves, the query that reads
 * them and the validity rule live in lib/identity (api-keys.ts, credential-state.ts).
 */
import type { Db } from '../../lib/db';
import { hashSecret } from '../../lib/crypto';
import { apiKeyRecord, readApiKeys, type ApiKeyChangeListener, type ApiKeyRecord } from '../../lib/identity/api-keys';
import type { Logger } from '../../lib/logger';
import { Periodic } from '../../lib/periodic';

const REREAD_MS = 60_000;

export class ApiKeyCache implements ApiKeyChangeListener {
  private readonly byHash = new Map<string, ApiKeyRecord>();
  private readonly hashById = new Map<number, string>();
  private since = new Date(0);
  private readonly periodic: Periodic;
  private loaded = false;

  constructor(private readonly db: Db | null, log: Logger, refreshMs = 2000) {
    this.periodic = new Periodic(() => this.refresh(), refreshMs, log, 'API key refresh');
  }

  /** Whether the keys have been read at least once (before that, every key is unknown). */
  get ready(): boolean {
    return this.loaded;
  }

  /** The cached key of a presented secret (any state), or undefined. */
  lookup(secret: string): ApiKeyRecord | undefined {
    if (this.byHash.size === 0) return undefined;
    return this.byHash.get(hashSecret(secret));
  }

  /** Reads keys changed since the last read (all of them the first time). */
  async refresh(): Promise<void> {
    if (!this.db) return;
    // Re-reads the last minute too (idempotent): a transaction stamps `now()` when it starts, so a
    // row can become visible after rows stamped later than it.
    const from = new Date(this.since.getTime() - REREAD_MS);
    const rows = await readApiKeys(this.db, 'greatest(k.updated_at, u.updated_at) >= ? order by changed_at', [from]);
    for (const row of rows) {
      this.put(row.key_hash, apiKeyRecord(row));
      if (row.changed_at > this.since) this.since = row.changed_at;
    }
    this.loaded = true;
  }

  /** Puts one key in the cache (used after changes made by this process). */
  put(keyHash: string, key: ApiKeyRecord): void {
    this.byHash.set(keyHash, key);
    this.hashById.set(key.id, keyHash);
  }

  /** Re-reads the keys of one user now (after a role, suspension or key change by this process). */
  async reloadUser(userId: number): Promise<void> {
    if (!this.db) return;
    for (const row of await readApiKeys(this.db, 'k.user_id = ?', [userId])) this.put(row.key_hash, apiKeyRecord(row));
  }

  /** Drops keys that no longer exist (after a hard delete). */
  forgetUser(userId: number): void {
    for (const [id, hash] of this.hashById) {
      if (this.byHash.get(hash)?.userId === userId) {
        this.byHash.delete(hash);
        this.hashById.delete(id);
      }
    }
  }

  async start(): Promise<void> {
    if (this.db) await this.periodic.start();
  }

  stop(): void {
    this.periodic.stop();
  }
}
