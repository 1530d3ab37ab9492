/**
 * The caller's own security routes (docs/identity.md "Password", "Impersonation"):
 * - `POST /auth/password`: change the password (needs the current one); the account's other
 *   sign-ins end (their refresh sessions are revoked; the caller's own stays). Access
 *   `credentials`: an impersonation token is refused with 403;
 * - `GET /auth/impersonations`: who acted as this account for support, when, until when and how
 *   often, newest first.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { listImpersonations } from '../../lib/identity/impersonation';
import { hashPassword, verifyPassword } from '../../lib/identity/passwords';
import type { GatewayDeps } from '../deps';
import type { GatewayState } from '../surfaces/state';
import { accountDb, accountGuards, accountIdOf } from './account-guard';
import { findUserById } from './accounts';

const BODY_LIMIT = 64 * 1024;
const passwordBody = z.object({
  current_password: z.string().min(1).max(1024),
  new_password: z.string().min(10, 'must be at least 10 characters').max(1024),
}).strict();

export function accountSecurityRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/auth' });
  const { account, credentials } = accountGuards(deps);

  router.post('/password', credentials, async (ctx) => {
    const userId = accountIdOf(ctx.state);
    const body = validateBody(passwordBody, await readJsonBody(ctx.req, BODY_LIMIT));
    const db = accountDb(deps);
    const user = await findUserById(db, userId);
    if (!user?.password_hash || !(await verifyPassword(body.current_password, user.password_hash))) {
      throw new AppError('invalid_request', "Invalid field 'current_password': it is not the account's password", { param: 'current_password' });
    }
    const hash = await hashPassword(body.new_password);
    const keep = ctx.state.accountToken?.sessionId;
    await db.transaction(async (trx) => {
      await trx('users').where({ id: userId }).update({ password_hash: hash, updated_at: trx.fn.now() });
      const others = trx('refresh_sessions').where({ user_id: userId }).whereNull('revoked_at');
      await (keep ? others.whereNot({ family_id: keep }) : others).update({ revoked_at: trx.fn.now() });
    });
    ctx.state.log.info({ event: 'password_changed', user_id: userId }, 'password changed; the account\'s other sign-ins were ended');
    ctx.status = 204;
  });

  router.get('/impersonations', account, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { data: await listImpersonations(accountDb(deps), accountIdOf(ctx.state)) };
  });

  documentRoute(router, 'POST', '/password', { body: passwordBody, success: 204, summary: "Changes the account's password (its own sign-in only; other sign-ins end)." });
  documentRoute(router, 'GET', '/impersonations', { summary: 'Who signed in as this account for support: when, until when, how often.' });
  return router;
}
