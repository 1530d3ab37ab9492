/**
 * Inference grants as the hot path sees them: an in-memory map from token digest to grant state
 * (owner, owner's role, model, expiry, revocation, owner suspension), refreshed like the API key
 * cache. It loads the grants that have not long expired when the database answers, then every
 * `AUTH_KEY_REFRESH_SECONDS` reads only rows changed since (grants or their owners); changes made
 * by this process apply at once. A presented `agr_` token the cache does not know may cost one
 * database lookup (so a grant issued by another replica works at once); a miss is remembered
 * briefly so unknown tokens cannot turn into a query per request.
 */
import type { Db } from '../../lib/db';
import { hashSecret } from '../../lib/crypto';
import { credentialState, type CredentialFacts, type CredentialState } from '../../lib/identity/credential-state';
import { roleOf, type Role } from '../../lib/identity/roles';
import type { Logger } from '../../lib/logger';
import { Periodic } from '../../lib/periodic';
import { GRANT_TOKEN_PREFIX, type GrantKind, type GrantRow } from './grant-store';

export interface CachedGrant extends CredentialFacts {
  grantId: string;
  userId: number;
  role: Role;
  model: string;
  kind: GrantKind;
  prefix: string;
  expiresAt: number;
}

/** A row of `SELECT_GRANTS`: the grant's own columns and its owner's state. */
type GrantCacheRow = Omit<GrantRow, 'attempt_id' | 'job_id'> & {
  role: string;
  suspended_at: Date | null;
  deleted_at: Date | null;
  changed_at: Date;
};

const SELECT_GRANTS = `
  select g.grant_id, g.token_hash, g.token_prefix, g.user_id, g.model, g.kind, g.expires_at, g.revoked_at,
         u.role, u.suspended_at, u.deleted_at, greatest(g.updated_at, u.updated_at) as changed_at
    from agent_grants g join users u on u.id = g.user_id`;

/** Grants expired longer than this are neither loaded nor kept. */
const KEEP_EXPIRED_MS = 60_000;
/** Re-read window behind the newest change seen (transactions stamp `now()` when they start). */
const REREAD_MS = 60_000;
/** How long an unknown `agr_` token is remembered as unknown. */
const NEGATIVE_TTL_MS = 2_000;
const NEGATIVE_MAX = 10_000;

function toCached(row: GrantCacheRow): CachedGrant {
  return {
    grantId: row.grant_id, userId: Number(row.user_id), model: row.model, kind: row.kind, prefix: row.token_prefix,
    role: roleOf(row.role),
    expiresAt: row.expires_at.getTime(), revoked: row.revoked_at !== null,
    userSuspended: row.suspended_at !== null, userDeleted: row.deleted_at !== null,
  };
}

/** The state of a cached grant at `now`: the validity rule of every credential (lib/identity/credential-state.ts). */
export function grantState(grant: CachedGrant | undefined, now = Date.now()): CredentialState {
  return credentialState(grant, now);
}

/** Whether a bearer token is shaped like an inference grant (`agr_…`). */
export function isGrantToken(token: string): boolean {
  return token.startsWith(`${GRANT_TOKEN_PREFIX}_`);
}

/**
 * Before a synchronous credential check: an `agr_` token the cache does not know yet (issued by
 * another gateway replica moments ago) is looked up once. API keys, known grants and sources the
 * blocklist refuses never wait.
 */
export async function ensureGrantCached(grants: GrantCache | undefined, token: string | undefined, blocked: () => boolean): Promise<void> {
  if (!grants || !token || !isGrantToken(token) || grants.lookup(token) || blocked()) return;
  await grants.ensure(token);
}

export class GrantCache {
  private readonly byHash = new Map<string, CachedGrant>();
  private readonly hashById = new Map<string, string>();
  private readonly unknown = new Map<string, number>();
  private since = new Date(0);
  private readonly periodic: Periodic;

  constructor(private readonly db: Db, private readonly log: Logger, refreshMs = 2000, private readonly now: () => number = Date.now) {
    this.periodic = new Periodic(() => this.refresh(), refreshMs, log, 'Inference grant refresh');
  }

  /** The cached grant of a presented token (any state), or undefined. Never touches the database. */
  lookup(token: string): CachedGrant | undefined {
    if (this.byHash.size === 0) return undefined;
    return this.byHash.get(hashSecret(token));
  }

  /**
   * Makes sure a presented grant token is in the cache: one database lookup when it is neither
   * cached nor recently found unknown. Failures are logged and leave the token unknown.
   */
  async ensure(token: string): Promise<void> {
    const hash = hashSecret(token);
    if (this.byHash.has(hash)) return;
    const missUntil = this.unknown.get(hash);
    if (missUntil !== undefined && missUntil > this.now()) return;
    try {
      const rows = await this.db.raw<{ rows: GrantCacheRow[] }>(`${SELECT_GRANTS} where g.token_hash = ?`, [hash]);
      const row = rows.rows[0];
      if (row) {
        this.put(toCached(row), row.token_hash);
        return;
      }
    } catch (err) {
      this.log.warn({ err, event: 'grant_lookup_failed' }, 'inference grant lookup failed; treating the token as unknown');
    }
    if (this.unknown.size >= NEGATIVE_MAX) this.unknown.clear();
    this.unknown.set(hash, this.now() + NEGATIVE_TTL_MS);
  }

  /** Reads grants changed since the last read (every live grant the first time) and drops long-expired ones. */
  async refresh(): Promise<void> {
    const from = new Date(this.since.getTime() - REREAD_MS);
    const keepAfter = new Date(this.now() - KEEP_EXPIRED_MS);
    const rows = await this.db.raw<{ rows: GrantCacheRow[] }>(
      `${SELECT_GRANTS} where (g.updated_at >= ? or u.updated_at >= ?) and g.expires_at > ? order by changed_at`, [from, from, keepAfter],
    );
    for (const row of rows.rows) {
      this.put(toCached(row), row.token_hash);
      if (row.changed_at > this.since) this.since = row.changed_at;
    }
    for (const [hash, grant] of this.byHash) {
      if (grant.expiresAt < keepAfter.getTime()) this.drop(grant.grantId, hash);
    }
  }

  /** Puts one grant in the cache under its token digest; a rotated grant's old digest is dropped. */
  put(grant: CachedGrant, tokenHash: string): void {
    const previous = this.hashById.get(grant.grantId);
    if (previous !== undefined && previous !== tokenHash) this.byHash.delete(previous);
    this.byHash.set(tokenHash, grant);
    this.hashById.set(grant.grantId, tokenHash);
    this.unknown.delete(tokenHash);
  }

  /** Re-reads one grant now (after a change made by this process). */
  async reload(grantId: string): Promise<void> {
    const rows = await this.db.raw<{ rows: GrantCacheRow[] }>(`${SELECT_GRANTS} where g.grant_id = ?`, [grantId]);
    const row = rows.rows[0];
    if (row) this.put(toCached(row), row.token_hash);
  }

  private drop(grantId: string, hash: string): void {
    this.byHash.delete(hash);
    if (this.hashById.get(grantId) === hash) this.hashById.delete(grantId);
  }

  async start(): Promise<void> {
    await this.periodic.start();
  }

  stop(): void {
    this.periodic.stop();
  }
}
