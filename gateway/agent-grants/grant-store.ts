/**
 * Inference grants in PostgreSQL (`agent_grants`; docs/agent-grants.md): issue (a `turn` grant per
 * attempt, rotated in place when issued again; a `prompt_rewrite` grant per operation; a `title`
 * grant per chat, used once), renew and revoke. The token (`agr_<43 base64url chars>`) is returned
 * once; only its SHA-256 digest and visible prefix are stored. Every change stamps `updated_at`,
 * which the gateways' grant caches follow.
 */
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { AppError } from '../../lib/errors';
import type { GrantKind } from '../../lib/contracts/grant-dispatch';

export const GRANT_TOKEN_PREFIX = 'agr';
/** Lifetime of a prompt-rewrite grant (120 s): fixed, never renewed. */
export const PROMPT_REWRITE_TTL_SECONDS = 120;

/** Lifetime of a chat-title grant (its five calls end within 120 s): fixed, never renewed. */
export const TITLE_TTL_SECONDS = 120;

export type { GrantKind };

/** Whether grants of `kind` live a fixed short time and are never renewed nor issued twice. */
export function isShortLivedKind(kind: GrantKind): boolean {
  return kind === 'prompt_rewrite' || kind === 'title';
}

export interface GrantScope {
  userId: number;
  /** The public model id (already resolved from an alias). */
  model: string;
  kind: GrantKind;
  jobId?: string | undefined;
  attemptId?: string | undefined;
  hostId?: string | undefined;
  groupId?: string | undefined;
  generation?: number | undefined;
  operationId?: string | undefined;
  ttlSeconds: number;
}

export interface IssuedGrant {
  grantId: string;
  token: string;
  tokenHash: string;
  expiresAt: Date;
}

export interface GrantRow {
  grant_id: string;
  token_hash: string;
  token_prefix: string;
  user_id: string;
  model: string;
  kind: GrantKind;
  attempt_id: string | null;
  job_id: string | null;
  expires_at: Date;
  revoked_at: Date | null;
}

/** The grant id of a turn grant: deterministic per attempt, so a retried issue rotates it. */
export function turnGrantId(attemptId: string): string {
  return `grant_${attemptId}`;
}

function newGrantId(scope: GrantScope): string {
  if (scope.kind === 'turn') return turnGrantId(scope.attemptId ?? '');
  return `grant_${scope.operationId ?? ''}`;
}

function columns(scope: GrantScope) {
  return {
    user_id: scope.userId, model: scope.model, kind: scope.kind,
    job_id: scope.jobId ?? null, attempt_id: scope.attemptId ?? null, host_id: scope.hostId ?? null,
    group_id: scope.groupId ?? null, generation: scope.generation ?? null, operation_id: scope.operationId ?? null,
  };
}

/**
 * Issues a grant. A `turn` grant issued again for the same attempt gets a new token (the old one
 * stops working), a new expiry and the given residency; it keeps its id. A revoked grant stays
 * revoked (409), and so does a grant id already held by another owner, model or kind (409).
 */
export async function issueGrant(db: Db, scope: GrantScope): Promise<IssuedGrant> {
  const grantId = newGrantId(scope);
  const token = generateSecret(GRANT_TOKEN_PREFIX);
  const tokenHash = hashSecret(token);
  return db.transaction(async (trx) => {
    const existing = await trx('agent_grants').where({ grant_id: grantId }).forUpdate().first<GrantRow | undefined>();
    if (existing) {
      if (existing.revoked_at) throw new AppError('conflict', `Grant ${grantId} was revoked; a revoked grant is never issued again`);
      if (Number(existing.user_id) !== scope.userId || existing.model !== scope.model || existing.kind !== scope.kind) {
        throw new AppError('conflict', `Grant ${grantId} already exists for another owner, model or kind`);
      }
      if (isShortLivedKind(scope.kind)) throw new AppError('conflict', `Grant ${grantId} already exists; ${scope.kind} operation ids are used once`);
    }
    const values = {
      ...columns(scope), token_hash: tokenHash, token_prefix: secretPrefix(token),
      expires_at: trx.raw(`now() + make_interval(secs => ?)`, [scope.ttlSeconds]), updated_at: trx.fn.now(),
    };
    const [row] = existing
      ? await trx('agent_grants').where({ grant_id: grantId }).update(values).returning<Array<{ expires_at: Date }>>(['expires_at'])
      : await trx('agent_grants').insert({ grant_id: grantId, ...values }).returning<Array<{ expires_at: Date }>>(['expires_at']);
    return { grantId, token, tokenHash, expiresAt: row!.expires_at };
  });
}

/**
 * Extends a live `turn` grant to `ttlSeconds` from now: 404 unknown; 409 revoked, expired or a
 * prompt-rewrite or title grant (never renewed).
 */
export async function renewGrant(db: Db, grantId: string, ttlSeconds: number): Promise<{ expiresAt: Date }> {
  return db.transaction(async (trx) => {
    const row = await trx('agent_grants').where({ grant_id: grantId }).forUpdate()
      .first<(GrantRow & { live: boolean }) | undefined>('*', trx.raw('expires_at > now() as live'));
    if (!row) throw new AppError('not_found', `Grant ${grantId} not found`);
    if (isShortLivedKind(row.kind)) throw new AppError('conflict', `Grant ${grantId} is a ${row.kind} grant; those are never renewed`);
    if (row.revoked_at) throw new AppError('conflict', `Grant ${grantId} was revoked`);
    if (!row.live) throw new AppError('conflict', `Grant ${grantId} has expired`);
    const [updated] = await trx('agent_grants').where({ grant_id: grantId })
      .update({ expires_at: trx.raw(`now() + make_interval(secs => ?)`, [ttlSeconds]), updated_at: trx.fn.now() })
      .returning<Array<{ expires_at: Date }>>(['expires_at']);
    return { expiresAt: updated!.expires_at };
  });
}

/** Revokes a grant (idempotent: the first revocation time is kept); 404 unknown. Returns its token digest. */
export async function revokeGrant(db: Db, grantId: string): Promise<{ tokenHash: string }> {
  const [row] = await db('agent_grants').where({ grant_id: grantId })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())'), updated_at: db.fn.now() })
    .returning<Array<{ token_hash: string }>>(['token_hash']);
  if (!row) throw new AppError('not_found', `Grant ${grantId} not found`);
  return { tokenHash: row.token_hash };
}

/** The owner's account state, for issuing (404 unknown, 409 suspended or deleted). */
export async function requireActiveOwner(db: Db, userId: number): Promise<void> {
  const user = await db('users').where({ id: userId }).first<{ suspended_at: Date | null; deleted_at: Date | null } | undefined>('suspended_at', 'deleted_at');
  if (!user) throw new AppError('not_found', `User ${userId} not found`);
  if (user.deleted_at) throw new AppError('conflict', `User ${userId} is deleted`);
  if (user.suspended_at) throw new AppError('conflict', `User ${userId} is suspended`);
}
