/**
 * Gateway API keys: `gk_<43 random base64url chars>`, shown once at creation, stored as a SHA-256
 * digest with a visible prefix. Inference authenticates from {@link ApiKeyCache}, an in-memory
 * map from digest to key state (owner, owner's role, expiry, revocation, suspension), so the hot
 * path never queries the database: the cache loads every key when the database answers, then
 * every `AUTH_KEY_REFRESH_SECONDS` reads only rows changed since its last read (keys or their
 * owners), and changes made through this process apply at once.
 */
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import type { Logger } from '../../lib/logger';
import { Periodic } from '../../lib/periodic';
import { ROLES, type Role } from '../registry/types';

export const API_KEY_PREFIX = 'gk';

/** Why a presented key does not authenticate (spec 5.11 labels rejection rows with it). */
export type CredentialState = 'valid' | 'unknown' | 'revoked' | 'expired' | 'user_suspended' | 'user_deleted';

export interface CachedKey {
  id: number;
  userId: number;
  prefix: string;
  role: Role;
  expiresAt: number | null;
  revoked: boolean;
  userSuspended: boolean;
  userDeleted: boolean;
}

interface KeyRow {
  id: string;
  user_id: string;
  prefix: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  role: string;
  suspended_at: Date | null;
  deleted_at: Date | null;
  changed_at: Date;
}

function toCached(row: KeyRow): CachedKey {
  return {
    id: Number(row.id), userId: Number(row.user_id), prefix: row.prefix,
    role: ROLES.includes(row.role as Role) ? (row.role as Role) : 'free',
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
    revoked: row.revoked_at !== null, userSuspended: row.suspended_at !== null, userDeleted: row.deleted_at !== null,
  };
}

/** The state of a cached key at `now`. */
export function credentialState(key: CachedKey | undefined, now = Date.now()): CredentialState {
  if (!key) return 'unknown';
  if (key.revoked) return 'revoked';
  if (key.userDeleted) return 'user_deleted';
  if (key.userSuspended) return 'user_suspended';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'valid';
}

const SELECT_KEYS = `
  select k.id, k.user_id, k.prefix, k.key_hash, k.expires_at, k.revoked_at, u.role, u.suspended_at, u.deleted_at,
         greatest(k.updated_at, u.updated_at) as changed_at
    from api_keys k join users u on u.id = k.user_id`;

const REREAD_MS = 60_000;

export class ApiKeyCache {
  private readonly byHash = new Map<string, CachedKey>();
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
  lookup(secret: string): CachedKey | undefined {
    if (this.byHash.size === 0) return undefined;
    return this.byHash.get(hashSecret(secret));
  }

  /** Reads keys changed since the last read (all of them the first time). */
  async refresh(): Promise<void> {
    if (!this.db) return;
    // Re-reads the last minute too (idempotent): a transaction stamps `now()` when it starts, so a
    // row can become visible after rows stamped later than it.
    const from = new Date(this.since.getTime() - REREAD_MS);
    const rows = await this.db.raw<{ rows: Array<KeyRow & { key_hash: string }> }>(
      `${SELECT_KEYS} where greatest(k.updated_at, u.updated_at) >= ? order by changed_at`, [from],
    );
    for (const row of rows.rows) {
      this.put(row.key_hash, toCached(row));
      if (row.changed_at > this.since) this.since = row.changed_at;
    }
    this.loaded = true;
  }

  /** Puts one key in the cache (used after changes made by this process). */
  put(keyHash: string, key: CachedKey): void {
    this.byHash.set(keyHash, key);
    this.hashById.set(key.id, keyHash);
  }

  /** Re-reads the keys of one user now (after a role, suspension or key change by this process). */
  async reloadUser(userId: number): Promise<void> {
    if (!this.db) return;
    const rows = await this.db.raw<{ rows: Array<KeyRow & { key_hash: string }> }>(`${SELECT_KEYS} where k.user_id = ?`, [userId]);
    for (const row of rows.rows) this.put(row.key_hash, toCached(row));
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

export interface IssuedKey {
  id: number;
  key: string;
  prefix: string;
  name: string;
  expires_at: string | null;
  created_at: string;
}

/** Creates a key for `userId`; the secret is returned once and only its digest is stored. */
export async function issueApiKey(db: Db, cache: ApiKeyCache, userId: number, name: string, expiresAt: Date | null): Promise<IssuedKey> {
  const key = generateSecret(API_KEY_PREFIX);
  const keyHash = hashSecret(key);
  const [row] = await db('api_keys')
    .insert({ user_id: userId, name, key_hash: keyHash, prefix: secretPrefix(key), expires_at: expiresAt })
    .returning<Array<{ id: string; prefix: string; created_at: Date }>>(['id', 'prefix', 'created_at']);
  await cache.reloadUser(userId);
  return {
    id: Number(row!.id), key, prefix: row!.prefix, name,
    expires_at: expiresAt ? expiresAt.toISOString() : null, created_at: row!.created_at.toISOString(),
  };
}

export interface ListedKey {
  id: number;
  name: string;
  prefix: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** A user's keys, newest first (never the secret). */
export async function listApiKeys(db: Db, userId: number): Promise<ListedKey[]> {
  const rows = await db('api_keys').where({ user_id: userId }).orderBy('id', 'desc')
    .select<Array<{ id: string; name: string; prefix: string; created_at: Date; expires_at: Date | null; revoked_at: Date | null }>>('id', 'name', 'prefix', 'created_at', 'expires_at', 'revoked_at');
  return rows.map((r) => ({
    id: Number(r.id), name: r.name, prefix: r.prefix, created_at: r.created_at.toISOString(),
    expires_at: r.expires_at?.toISOString() ?? null, revoked_at: r.revoked_at?.toISOString() ?? null,
  }));
}

/** Revokes one of the user's keys; false when the user has no such key. Revoking twice is a no-op. */
export async function revokeApiKey(db: Db, cache: ApiKeyCache, userId: number, keyId: number): Promise<boolean> {
  const updated = await db('api_keys').where({ id: keyId, user_id: userId })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())'), updated_at: db.fn.now() });
  if (updated === 0) return false;
  await cache.reloadUser(userId);
  return true;
}
