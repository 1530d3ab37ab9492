/**
 * Admin endpoints for identity (docs/identity.md): users (list, role/permissions/suspension), the
 * auth-failure blocklist, login-event purge and permanent deletion of a user.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { GatewayDeps } from '../deps';
import { ROLES, type Role } from '../registry/types';
import { adminRoute } from './http';
import type { GatewayState } from '../surfaces/state';
import { adminDb } from './guard';

/** Permissions an account can hold (`agent.use` for owners, `agent.admin` for operators; docs/identity.md). */
export const PERMISSIONS = ['agent.use', 'agent.admin'] as const;

const userPatch = z.object({
  role: z.enum(ROLES as unknown as [Role, ...Role[]]).optional(),
  permissions: z.array(z.enum(PERMISSIONS)).max(PERMISSIONS.length).optional(),
  suspended: z.boolean().optional(),
}).strict().refine((b) => Object.keys(b).length > 0, 'give at least one of role, permissions, suspended');

const userQuery = z.object({
  email: z.string().trim().min(1).max(320).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  after_id: z.coerce.number().int().min(0).default(0),
}).strict();

interface ListedUser {
  id: string;
  email: string;
  role: Role;
  permissions: string[];
  email_verified_at: Date | null;
  suspended_at: Date | null;
  created_at: Date;
}

function userView(u: ListedUser) {
  return {
    id: Number(u.id), email: u.email, role: u.role, permissions: u.permissions,
    email_verified: u.email_verified_at !== null, suspended: u.suspended_at !== null, created_at: u.created_at.toISOString(),
  };
}

const USER_COLUMNS = ['id', 'email', 'role', 'permissions', 'email_verified_at', 'suspended_at', 'created_at'];

function positiveId(raw: string, field: string): number {
  const id = Number(raw);
  if (!Number.isSafeInteger(id) || id <= 0) throw new AppError('invalid_request', `Invalid field '${field}': must be a positive integer`, { param: field });
  return id;
}

const clearBody = z.object({ ip: z.string().trim().min(1).max(100) }).strict();
const purgeQuery = z.union([
  z.object({ older_than_days: z.coerce.number().int().min(0).max(36_500) }).strict(),
  z.object({ user_id: z.coerce.number().int().positive() }).strict(),
]);

export function identityAdminRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/admin' });
  const admin = adminRoute(deps);

  router.get('/auth-blocks', admin, (ctx) => {
    ctx.body = { data: deps.gate.blocklist.list() };
  });

  router.post('/auth-blocks/clear', admin, async (ctx) => {
    const body = validateBody(clearBody, await readJsonBody(ctx.req, 4096));
    const cleared = deps.gate.blocklist.clear(body.ip);
    if (cleared) ctx.state.log.info({ event: 'auth_block_cleared', source: body.ip, admin: ctx.state.admin?.via }, `auth block lifted for ${body.ip}`);
    ctx.body = { ip: body.ip, cleared };
  });

  router.get('/users', admin, async (ctx) => {
    const parsed = userQuery.safeParse(ctx.query);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new AppError('invalid_request', `Invalid query parameter '${issue.path.join('.')}': ${issue.message}`, { param: issue.path.join('.') });
    }
    const db = adminDb(deps.database.db);
    const query = db('users').whereNull('deleted_at').where('id', '>', parsed.data.after_id).orderBy('id').limit(parsed.data.limit);
    if (parsed.data.email) query.whereRaw('lower(email) like ?', [`%${parsed.data.email.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`]);
    ctx.body = { data: (await query.select<ListedUser[]>(USER_COLUMNS)).map(userView) };
  });

  router.patch('/users/:userId', admin, async (ctx) => {
    const userId = positiveId(ctx.params.userId!, 'user_id');
    const body = validateBody(userPatch, await readJsonBody(ctx.req, 4096));
    const db = adminDb(deps.database.db);
    const changes: Record<string, unknown> = { updated_at: db.fn.now() };
    if (body.role !== undefined) changes.role = body.role;
    if (body.permissions !== undefined) changes.permissions = [...new Set(body.permissions)].sort();
    if (body.suspended !== undefined) changes.suspended_at = body.suspended ? db.raw('coalesce(suspended_at, now())') : null;
    const [row] = await db('users').where({ id: userId }).whereNull('deleted_at').update(changes).returning<ListedUser[]>(USER_COLUMNS);
    if (!row) throw new AppError('not_found', `No user ${userId}`);
    if (body.suspended === true) {
      await db('refresh_sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
    }
    await deps.keys?.reloadUser(userId);
    ctx.state.log.info({ event: 'user_changed', user_id: userId, changes: Object.keys(body), admin: ctx.state.admin?.via }, `user ${userId} changed by an administrator`);
    ctx.body = userView(row);
  });

  router.delete('/login-events', admin, async (ctx) => {
    const parsed = purgeQuery.safeParse(ctx.query);
    if (!parsed.success) {
      throw new AppError('invalid_request', 'Give exactly one of older_than_days=<non-negative integer> or user_id=<positive integer>', { param: 'older_than_days' });
    }
    const db = adminDb(deps.database.db);
    const query = 'user_id' in parsed.data
      ? db('login_events').where({ user_id: parsed.data.user_id })
      : db('login_events').where('created_at', '<', db.raw(`now() - make_interval(days => ?)`, [parsed.data.older_than_days]));
    ctx.body = { deleted: await query.delete() };
  });

  documentRoute(router, 'GET', '/users', { query: userQuery, summary: 'Accounts, by id (search by e-mail).' });
  documentRoute(router, 'DELETE', '/login-events', { query: purgeQuery, summary: "Deletes login events older than some days, or one account's." });
  documentRoute(router, 'POST', '/auth-blocks/clear', { body: clearBody, summary: 'Lifts the automatic block of a client address.' });
  documentRoute(router, 'PATCH', '/users/:userId', { body: userPatch, summary: "Changes an account's role, suspension or limits." });
  documentRoute(router, 'POST', '/users/:userId/hard-delete', { noBody: true, summary: 'Deletes an account and its data permanently (PERMANENT_DELETION_ENABLED).' });
  router.post('/users/:userId/hard-delete', admin, async (ctx) => {
    if (!deps.settings.PERMANENT_DELETION_ENABLED) {
      throw new AppError('forbidden', 'Permanent deletion is turned off (PERMANENT_DELETION_ENABLED=false)');
    }
    const userId = positiveId(ctx.params.userId!, 'user_id');
    const db = adminDb(deps.database.db);
    const result = await db.transaction(async (trx) => {
      const apiLogs = await trx('api_logs').where({ user_id: userId }).delete();
      const users = await trx('users').where({ id: userId }).delete();
      return { users, apiLogs };
    });
    if (result.users === 0) throw new AppError('not_found', `No user ${userId}`);
    deps.keys?.forgetUser(userId);
    ctx.state.log.warn({ event: 'user_hard_deleted', user_id: userId, api_logs_deleted: result.apiLogs }, `user ${userId} permanently deleted`);
    ctx.body = { user_id: userId, deleted: true, api_logs_deleted: result.apiLogs };
  });

  return router;
}
