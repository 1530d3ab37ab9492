/**
 * Admin endpoints for identity (spec 4.3): the auth-failure blocklist, login-event purge and
 * permanent deletion of a user.
 */
import Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { GatewayDeps } from '../app';
import type { GatewayState } from '../surfaces/state';
import { adminDb } from './guard';

const clearBody = z.object({ ip: z.string().trim().min(1).max(100) }).strict();
const purgeQuery = z.union([
  z.object({ older_than_days: z.coerce.number().int().min(0).max(36_500) }).strict(),
  z.object({ user_id: z.coerce.number().int().positive() }).strict(),
]);

export function identityAdminRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/admin' });

  router.get('/auth-blocks', (ctx) => {
    ctx.body = { data: deps.gate.blocklist.list() };
  });

  router.post('/auth-blocks/clear', async (ctx) => {
    const body = validateBody(clearBody, await readJsonBody(ctx.req, 4096));
    const cleared = deps.gate.blocklist.clear(body.ip);
    if (cleared) ctx.state.log.info({ event: 'auth_block_cleared', source: body.ip, admin: ctx.state.admin?.via }, `auth block lifted for ${body.ip}`);
    ctx.body = { ip: body.ip, cleared };
  });

  router.delete('/login-events', async (ctx) => {
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

  router.post('/users/:userId/hard-delete', async (ctx) => {
    if (!deps.settings.PERMANENT_DELETION_ENABLED) {
      throw new AppError('forbidden', 'Permanent deletion is turned off (PERMANENT_DELETION_ENABLED=false)');
    }
    const userId = Number(ctx.params.userId);
    if (!Number.isSafeInteger(userId) || userId <= 0) throw new AppError('invalid_request', "Invalid field 'user_id': must be a positive integer", { param: 'user_id' });
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
