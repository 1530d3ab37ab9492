/**
 * Accounts (`users`): creation, lookup, `ADMIN_EMAILS` promotion, refresh sessions, e-mail
 * verification and the mail outbox. No mail server is configured: messages are stored in
 * `email_outbox` for an operator or a mail relay to send, and a log line names each one.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret } from '../../lib/crypto';
import type { Logger } from '../../lib/logger';
import { cleanText } from '../../lib/text';
import type { Role } from '../registry/types';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  role: Role;
  permissions: string[];
  email_verified_at: Date | null;
  suspended_at: Date | null;
  deleted_at: Date | null;
}

/** Parses a comma-separated e-mail list into lower-case addresses. */
export function emailList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((e) => e.trim().toLowerCase()).filter((e) => e.length > 0);
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db('users').whereRaw('lower(email) = lower(?)', [email]).first<UserRow | undefined>();
}

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return db('users').where({ id }).first<UserRow | undefined>();
}

/** Creates an account; undefined when the e-mail is taken. */
export async function createUser(db: Db, fields: { email: string; passwordHash: string; role?: Role; verified: boolean; permissions?: string[] }): Promise<UserRow | undefined> {
  const rows = await db('users')
    .insert({
      email: fields.email, password_hash: fields.passwordHash, role: fields.role ?? 'free',
      permissions: fields.permissions ?? [], email_verified_at: fields.verified ? db.fn.now() : null,
    })
    .onConflict(db.raw('(lower(email))'))
    .ignore()
    .returning<UserRow[]>('*');
  return rows[0];
}

/**
 * `ADMIN_EMAILS` (docs/identity.md): a `free` account whose e-mail is listed becomes `admin`, without
 * any proof that the caller owns the address. Returns the (possibly promoted) role.
 */
export async function promoteListedAdmin(db: Db, log: Logger, user: UserRow, adminEmails: readonly string[]): Promise<Role> {
  if (user.role !== 'free' || !adminEmails.includes(user.email.toLowerCase())) return user.role;
  await db('users').where({ id: user.id, role: 'free' }).update({ role: 'admin', updated_at: db.fn.now() });
  log.warn({ event: 'admin_email_promotion', user_id: Number(user.id) }, 'Account promoted from free to admin because its e-mail is listed in ADMIN_EMAILS');
  return 'admin';
}

export type LoginOutcome =
  | 'success' | 'bad_password' | 'unknown_email' | 'suspended' | 'unverified' | 'rate_limited' | 'ip_blocked' | 'deleted';

/**
 * Stores one login attempt. The e-mail and `User-Agent` are the client's and are only recorded:
 * cut, then cleaned (a cut can split a surrogate pair; docs/security.md, text hygiene).
 */
export async function recordLoginEvent(db: Db, event: { userId?: number | undefined; email: string; ip: string; userAgent: string | undefined; outcome: LoginOutcome }): Promise<void> {
  const userAgent = event.userAgent === undefined ? null : cleanText(event.userAgent.slice(0, 512));
  await db('login_events').insert({
    user_id: event.userId ?? null, email: cleanText(event.email.slice(0, 320)), ip: event.ip, user_agent: userAgent, outcome: event.outcome,
  });
}

// ---- refresh sessions ----

export const REFRESH_PREFIX = 'grt';

/** A refresh session's cookie secret and its family (the sign-in it continues). */
export interface RefreshSession {
  token: string;
  familyId: string;
}

/**
 * Opens a refresh session; returns the secret for the cookie. A login starts a family; each
 * rotation continues it (`familyId`), so "this sign-in is still live" survives refreshes and ends
 * with logout, reuse detection or expiry (impersonation ends with it: docs/identity.md).
 */
export async function openRefreshSession(db: Db | Knex.Transaction, userId: number, ttlDays: number, familyId?: string): Promise<RefreshSession> {
  const token = generateSecret(REFRESH_PREFIX);
  const [row] = await db('refresh_sessions')
    .insert({ user_id: userId, token_hash: hashSecret(token), expires_at: new Date(Date.now() + ttlDays * 86_400_000), ...(familyId ? { family_id: familyId } : {}) })
    .returning<Array<{ family_id: string }>>('family_id');
  return { token, familyId: row!.family_id };
}

/**
 * Consumes a refresh token: the session is revoked (rotation) and its user returned with the
 * successor session (same family, opened in the same transaction, only for an active account);
 * undefined when the token is unknown, revoked or expired. Presenting an already-rotated token
 * revokes every session of that user (the token was copied).
 */
export async function consumeRefreshSession(db: Db, log: Logger, token: string, ttlDays: number): Promise<{ user: UserRow | undefined; next?: RefreshSession } | undefined> {
  return db.transaction(async (trx) => {
    const session = await trx('refresh_sessions').where({ token_hash: hashSecret(token) }).forUpdate()
      .first<{ id: string; user_id: string; family_id: string; expires_at: Date; revoked_at: Date | null } | undefined>();
    if (!session) return undefined;
    if (session.revoked_at) {
      await trx('refresh_sessions').where({ user_id: session.user_id }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
      log.warn({ event: 'refresh_token_reuse', user_id: Number(session.user_id) }, 'A rotated refresh token was presented again; every session of the account was revoked');
      return undefined;
    }
    await trx('refresh_sessions').where({ id: session.id }).update({ revoked_at: trx.fn.now() });
    if (session.expires_at.getTime() <= Date.now()) return undefined;
    const user = await trx('users').where({ id: session.user_id }).first<UserRow | undefined>();
    if (!user || user.deleted_at || user.suspended_at) return { user };
    return { user, next: await openRefreshSession(trx, Number(user.id), ttlDays, session.family_id) };
  });
}

export async function revokeRefreshSession(db: Db, token: string): Promise<void> {
  await db('refresh_sessions').where({ token_hash: hashSecret(token) }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
}

// ---- e-mail verification and outbox ----

/** Queues a message in the outbox and logs that it is waiting (never its content). */
export async function queueEmail(db: Db, log: Logger, message: { to: string; kind: string; subject: string; body: string }): Promise<number> {
  const [row] = await db('email_outbox').insert({ recipient: message.to, kind: message.kind, subject: message.subject, body: message.body }).returning<Array<{ id: string }>>('id');
  const id = Number(row!.id);
  log.info({ event: 'email_queued', outbox_id: id, kind: message.kind, recipient: message.to }, `e-mail queued in email_outbox (id ${id}); no mail server is configured`);
  return id;
}

/** Creates a verification token (valid 48 hours) and queues the message carrying it. */
export async function queueVerification(db: Db, log: Logger, user: { id: number; email: string }, siteUrl: string): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  await db('email_verifications').insert({ user_id: user.id, token_hash: hashSecret(token), expires_at: new Date(Date.now() + 48 * 3_600_000) });
  const link = `${siteUrl.replace(/\/+$/, '')}/auth/verify-email?token=${token}`;
  await queueEmail(db, log, {
    to: user.email, kind: 'verify_email', subject: 'Confirm your e-mail address',
    body: `Confirm your e-mail address to finish signing up:\n\n${link}\n\nOr POST {"token": "${token}"} to /auth/verify-email. The link expires in 48 hours.`,
  });
}

/** Marks the e-mail of the token's user verified; false for an unknown, used or expired token. */
export async function consumeVerification(db: Db, token: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const row = await trx('email_verifications').where({ token_hash: hashSecret(token) }).whereNull('consumed_at').forUpdate()
      .first<{ id: string; user_id: string; expires_at: Date } | undefined>();
    if (!row || row.expires_at.getTime() <= Date.now()) return false;
    await trx('email_verifications').where({ id: row.id }).update({ consumed_at: trx.fn.now() });
    await trx('users').where({ id: row.user_id }).update({ email_verified_at: trx.fn.now(), updated_at: trx.fn.now() });
    return true;
  });
}
