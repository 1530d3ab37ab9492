/**
 * The automation score on the admin API (docs/automation-score.md), administrators only:
 *
 * - `GET /admin/users/:user_id/automation-score?days=30` — one user's score (404 for an unknown
 *   user; a user without rows in the window scores 0.5, `insufficient_data`).
 * - `GET /admin/users/automation-scores?days=30&limit=100&cursor=0&min_requests=1` — the users
 *   with rows in the window, by user id, a page at a time (`next_cursor` continues).
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import type { GatewayDeps } from '../deps';
import { DEFAULT_WINDOW_DAYS, MAX_WINDOW_DAYS, scorePage, scoreUser } from '../ops/automation-score';
import type { GatewayState } from '../surfaces/state';
import { adminQuery, adminRoute, dbOf } from './http';

const days = z.coerce.number().int().min(1).max(MAX_WINDOW_DAYS).default(DEFAULT_WINDOW_DAYS);

export const automationScoreQuerySchema = z.object({ days }).strict();

export const automationScoresQuerySchema = z.object({
  days,
  limit: z.coerce.number().int().min(1).max(500).default(100),
  /** The `next_cursor` of the previous page: the last user id it held. */
  cursor: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  min_requests: z.coerce.number().int().min(1).max(1_000_000_000).default(1),
}).strict();

function userIdParam(raw: string): number {
  const id = /^\d{1,15}$/.test(raw) ? Number(raw) : 0;
  if (id <= 0) throw new AppError('invalid_request', `Invalid path parameter 'user_id': must be a positive integer`, { param: 'user_id' });
  return id;
}

/** The `/admin/users/…automation-score…` routes. */
export function automationScoreRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/admin/users' });
  const admin = adminRoute(deps);
  router.get('/automation-scores', admin, async (ctx) => {
    const query = adminQuery(automationScoresQuerySchema, ctx.query);
    const now = new Date();
    const page = await scorePage(dbOf(deps), { days: query.days, now, limit: query.limit, afterUserId: query.cursor, minRequests: query.min_requests });
    ctx.body = {
      window_days: query.days, computed_at: now.toISOString(), min_requests: query.min_requests,
      data: page.scores, next_cursor: page.nextAfterUserId === null ? null : String(page.nextAfterUserId),
    };
  });
  router.get('/:user_id/automation-score', admin, async (ctx) => {
    const userId = userIdParam(ctx.params.user_id!);
    const query = adminQuery(automationScoreQuerySchema, ctx.query);
    const db = dbOf(deps);
    const user: unknown = await db('users').where({ id: userId }).first('id');
    if (user === undefined) throw new AppError('not_found', `No user ${userId}`, { param: 'user_id' });
    ctx.body = await scoreUser(db, userId, { days: query.days, now: new Date() });
  });
  documentRoute(router, 'GET', '/automation-scores', { query: automationScoresQuerySchema, summary: 'Automation scores of the users with requests in the window, a page at a time.' });
  documentRoute(router, 'GET', '/:user_id/automation-score', { query: automationScoreQuerySchema, summary: "One user's automation score." });
  return router;
}
