/**
 * Support impersonation (docs/identity.md "Impersonation"): an operator signed in with their own
 * account acts as a user for a short while. The `impersonations` row is the record the user sees
 * (who, when, until when, how often it was used) and the switch that ends it: a token is honoured
 * only while its row has not ended or expired, the administrator's sign-in (refresh-session
 * family) is still live, and the administrator still holds an operator right. Each honoured use is
 * counted on the row in the same statement that checks it.
 */
import type { Knex } from 'knex';
import type { Db } from '../db';
import { AppError } from '../errors';
import type { AccessPrincipal } from './access-tokens';

export interface ImpersonationRecord {
  id: number;
  user_id: number;
  admin_user_id: number;
  admin_email: string | null;
  reason: string | null;
  started_at: string;
  expires_at: string;
  ended_at: string | null;
  uses: number;
  last_used_at: string | null;
}

/** Records an impersonation starting now; returns its id and end. */
export async function recordImpersonation(
  db: Db | Knex.Transaction,
  fields: { userId: number; adminUserId: number; adminSession: string; reason: string | null; actorIp: string | null; ttlSeconds: number },
): Promise<{ id: number; expiresAt: Date }> {
  const [row] = await db('impersonations')
    .insert({
      user_id: fields.userId, admin_user_id: fields.adminUserId, admin_session: fields.adminSession, reason: fields.reason, actor_ip: fields.actorIp,
      expires_at: db.raw(`now() + make_interval(secs => ?)`, [fields.ttlSeconds]),
    })
    .returning<Array<{ id: string; expires_at: Date }>>(['id', 'expires_at']);
  return { id: Number(row!.id), expiresAt: row!.expires_at };
}

/** Whether the administrator's sign-in `family` is live: a refresh session of it not revoked and not expired. */
export async function signInLive(db: Db, userId: number, family: string): Promise<boolean> {
  const row: unknown = await db('refresh_sessions').where({ user_id: userId, family_id: family }).whereNull('revoked_at')
    .where('expires_at', '>', db.fn.now()).first(db.raw('1 as live'));
  return row !== undefined;
}

/**
 * Refuses (401) an impersonation token whose impersonation is no longer honoured (see the module
 * comment), and counts the use of one that is. A user's own token passes untouched.
 */
export async function assertImpersonationLive(db: Db, principal: AccessPrincipal): Promise<void> {
  const imp = principal.impersonation;
  if (!imp) return;
  const { rows } = await db.raw<{ rows: unknown[] }>(`
    update impersonations i set uses = i.uses + 1, last_used_at = now()
    where i.id = ? and i.user_id = ? and i.admin_user_id = ? and i.admin_session = ?
      and i.ended_at is null and i.expires_at > now()
      and exists (select 1 from refresh_sessions s where s.user_id = i.admin_user_id and s.family_id = i.admin_session
                  and s.revoked_at is null and s.expires_at > now())
      and exists (select 1 from users a where a.id = i.admin_user_id and a.deleted_at is null and a.suspended_at is null
                  and (a.role = 'admin' or 'agent.admin' = any(a.permissions)))
    returning i.id`, [imp.id, principal.userId, imp.adminUserId, imp.adminSession]);
  if (rows.length === 0) {
    throw new AppError('unauthorized', "The impersonation has ended (expired, ended by the administrator, or the administrator's sign-in ended)");
  }
}

/** Ends an impersonation now; false when it was unknown or had already ended. */
export async function endImpersonation(db: Db | Knex.Transaction, id: number): Promise<{ user_id: number; admin_user_id: number } | undefined> {
  const [row] = await db('impersonations').where({ id }).whereNull('ended_at').where('expires_at', '>', db.fn.now())
    .update({ ended_at: db.fn.now() }).returning<Array<{ user_id: string; admin_user_id: string }>>(['user_id', 'admin_user_id']);
  return row ? { user_id: Number(row.user_id), admin_user_id: Number(row.admin_user_id) } : undefined;
}

/** The impersonations of a user's account, newest first (what the user sees on their account). */
export async function listImpersonations(db: Db, userId: number, limit = 100): Promise<ImpersonationRecord[]> {
  const rows = await db('impersonations as i').leftJoin('users as a', 'a.id', 'i.admin_user_id').where('i.user_id', userId)
    .orderBy('i.id', 'desc').limit(limit)
    .select<Array<Record<string, unknown>>>('i.id', 'i.user_id', 'i.admin_user_id', 'a.email as admin_email', 'i.reason', 'i.started_at', 'i.expires_at', 'i.ended_at', 'i.uses', 'i.last_used_at');
  const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : null);
  return rows.map((r) => ({
    id: Number(r.id), user_id: Number(r.user_id), admin_user_id: Number(r.admin_user_id), admin_email: (r.admin_email as string | null) ?? null,
    reason: (r.reason as string | null) ?? null, started_at: iso(r.started_at)!, expires_at: iso(r.expires_at)!, ended_at: iso(r.ended_at),
    uses: Number(r.uses), last_used_at: iso(r.last_used_at),
  }));
}
