/**
 * Gateway API keys: `gk_<43 random base64url chars>`, shown once at creation, stored as a SHA-256
 * digest with a visible prefix (docs/identity.md). This module owns the `api_keys` table: issuing,
 * listing and revoking keys, the one query that reads a key with its owner's state, and the fresh
 * (uncached) authentication the control-plane API performs. The gateway authenticates from its
 * own cache (gateway/identity/api-keys.ts) filled by the same query; both apply
 * {@link credentialState}, the one validity rule.
 */
import type { Knex } from 'knex';
import type { Db } from '../db';
import { generateSecret, hashSecret, secretPrefix } from '../crypto';
import { accountRecord, type AccountRecord } from './accounts';
import { accountFacts, credentialState, type CredentialFacts, type CredentialState } from './credential-state';
import { roleOf, type Role } from './roles';

export const API_KEY_PREFIX = 'gk';

/** A key as authentication sees it: its owner, the owner's current role, and the facts the rule reads. */
export interface ApiKeyRecord extends CredentialFacts {
  id: number;
  userId: number;
  prefix: string;
  role: Role;
}

/** A row of {@link readApiKeys}: the key's columns and its owner's state. */
export interface ApiKeyRow {
  id: string;
  user_id: string;
  prefix: string;
  key_hash: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  role: string;
  suspended_at: Date | null;
  deleted_at: Date | null;
  /** The later of the key's and the owner's `updated_at` (what a cache refresh follows). */
  changed_at: Date;
}

/** The record of a key row. */
export function apiKeyRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: Number(row.id), userId: Number(row.user_id), prefix: row.prefix, role: roleOf(row.role),
    expiresAt: row.expires_at ? row.expires_at.getTime() : null, revoked: row.revoked_at !== null, ...accountFacts(row),
  };
}

const SELECT_API_KEYS = `
  select k.id, k.user_id, k.prefix, k.key_hash, k.expires_at, k.revoked_at, u.role, u.suspended_at, u.deleted_at,
         greatest(k.updated_at, u.updated_at) as changed_at`;
const FROM_API_KEYS = `
    from api_keys k join users u on u.id = k.user_id`;

/**
 * Keys with their owners' state: the one query of every key lookup. `where` is a SQL condition
 * over `k` (api_keys) and `u` (users) with `?` placeholders, plus an optional `order by`;
 * `extraColumns` adds owner columns a caller needs beside the rule's (e.g. `u.permissions`).
 */
export async function readApiKeys<Extra extends object = object>(
  db: Db | Knex.Transaction, where: string, bindings: readonly Knex.RawBinding[], extraColumns: readonly string[] = [],
): Promise<Array<ApiKeyRow & Extra>> {
  const columns = extraColumns.length > 0 ? `${SELECT_API_KEYS}, ${extraColumns.join(', ')}` : SELECT_API_KEYS;
  const result = await db.raw<{ rows: Array<ApiKeyRow & Extra> }>(`${columns}${FROM_API_KEYS} where ${where}`, bindings);
  return result.rows;
}

/** The outcome of a fresh key authentication: the state, and the key and its owner when there is one. */
export interface FreshKeyAuthentication {
  state: CredentialState;
  key?: ApiKeyRecord;
  /** The key's owner (with permissions), read in the same query. */
  owner?: AccountRecord;
}

/**
 * Authenticates a presented API key from PostgreSQL now (no cache): for the control-plane API,
 * where a request may wait one indexed query and must see a revocation at once.
 */
export async function authenticateApiKeyFresh(db: Db, secret: string, now = Date.now()): Promise<FreshKeyAuthentication> {
  const [row] = await readApiKeys<{ permissions: string[] }>(db, 'k.key_hash = ?', [hashSecret(secret)], ['u.permissions']);
  if (!row) return { state: credentialState(undefined, now) };
  const key = apiKeyRecord(row);
  return { state: credentialState(key, now), key, owner: accountRecord(row) };
}

/** Told after this process changed a user's keys (the gateway's cache re-reads them at once). */
export interface ApiKeyChangeListener {
  reloadUser(userId: number): Promise<void>;
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
export async function issueApiKey(db: Db, changes: ApiKeyChangeListener, userId: number, name: string, expiresAt: Date | null): Promise<IssuedKey> {
  const key = generateSecret(API_KEY_PREFIX);
  const keyHash = hashSecret(key);
  const [row] = await db('api_keys')
    .insert({ user_id: userId, name, key_hash: keyHash, prefix: secretPrefix(key), expires_at: expiresAt })
    .returning<Array<{ id: string; prefix: string; created_at: Date }>>(['id', 'prefix', 'created_at']);
  await changes.reloadUser(userId);
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
export async function revokeApiKey(db: Db, changes: ApiKeyChangeListener, userId: number, keyId: number): Promise<boolean> {
  const updated = await db('api_keys').where({ id: keyId, user_id: userId })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())'), updated_at: db.fn.now() });
  if (updated === 0) return false;
  await changes.reloadUser(userId);
  return true;
}
