/**
 * Admin views over the recent request log (docs/request-log.md):
 *
 * - `GET /admin/recent-requests/offloads?days=1` — requests the routing offloaded (rows whose
 *   `metadata.routing.offload` is set), per model, offload route and reason, with their share of
 *   the model's requests and how many failed; filters `user_id`, `session_id`, `model`, `type`
 *   (the surface: chat, completions, responses, embeddings, messages).
 * - `POST /admin/recent-requests/clear-errors` — deletes error rows (status >= 400 or an error
 *   code such as a stream that failed after its first byte) created within the last `days`
 *   (default 1), optionally of one `model`; answers `{ deleted }`. Aggregates in
 *   `provider_hourly_stats` are kept.
 *
 * See docs/request-log.md for the shapes.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { GatewayDeps } from '../deps';
import { adminQuery, adminRoute } from './http';
import type { GatewayState } from '../surfaces/state';
import { adminDb } from './guard';

const days = z.coerce.number().int().min(1).max(90).default(1);
const SURFACES = ['chat', 'completions', 'responses', 'embeddings', 'messages'] as const;

export const offloadsQuerySchema = z.object({
  days,
  user_id: z.coerce.number().int().positive().optional(),
  session_id: z.string().min(1).max(256).optional(),
  model: z.string().min(1).max(256).optional(),
  type: z.enum(SURFACES).optional(),
});

export const clearErrorsBodySchema = z.object({
  days,
  model: z.string().min(1).max(256).optional(),
}).strict();

type OffloadsQuery = z.infer<typeof offloadsQuerySchema>;

/** One offload group of the listing. */
export interface OffloadGroup {
  model: string | null;
  /** The offload route's endpoint id (the one that failed, when it failed). */
  route: string | null;
  /** `queue_wait`, `engine_wait`, `last_resort` (or `unknown`). */
  reason: string;
  requests: number;
  /** Offloaded requests that failed: the offload route failed, or the response was an error. */
  failures: number;
  /** Share of the model's requests (matching the filters) in the window. */
  share: number;
}

/** The reason of an offload attribution: a string, `{ reason }`, or one of the named flags set. */
const REASON = `case jsonb_typeof(o)
  when 'string' then o #>> '{}'
  when 'object' then coalesce(o->>'reason',
    (select k from jsonb_each(o) as e(k, v) where k in ('queue_wait', 'engine_wait', 'last_resort') and v not in ('false'::jsonb, 'null'::jsonb) order by k limit 1),
    'unknown')
  else 'unknown' end`;

async function offloads(db: Db, query: OffloadsQuery): Promise<Record<string, unknown>> {
  const where = ['created_at >= now() - make_interval(days => ?)'];
  const bindings: Array<string | number> = [query.days];
  if (query.user_id !== undefined) { where.push('user_id = ?'); bindings.push(query.user_id); }
  if (query.session_id !== undefined) { where.push(`metadata->>'session_id' = ?`); bindings.push(query.session_id); }
  if (query.model !== undefined) { where.push('model = ?'); bindings.push(query.model); }
  if (query.type !== undefined) { where.push('surface = ?'); bindings.push(query.type); }
  const sql = `
    with base as (
      select model, endpoint_id, status, error_code, metadata->'routing' as routing
      from api_logs where ${where.join(' and ')}
    ),
    totals as (select model, count(*)::int as n from base group by model),
    offloaded as (
      select model, routing->'offload' as o, routing, endpoint_id, status, error_code
      from base where routing->'offload' is not null and routing->'offload' not in ('null'::jsonb, 'false'::jsonb)
    ),
    grouped as (
      select model,
             coalesce(case when jsonb_typeof(o) = 'object' then o->>'offload_endpoint_id' end, routing->>'offload_endpoint_id', endpoint_id) as route,
             ${REASON} as reason,
             count(*)::int as requests,
             count(*) filter (where (jsonb_typeof(o) = 'object' and jsonb_exists(o, 'offload_endpoint_id')) or jsonb_exists(routing, 'offload_endpoint_id')
                                 or status >= 400 or error_code is not null)::int as failures
      from offloaded group by 1, 2, 3
    )
    select g.model, g.route, g.reason, g.requests, g.failures, round(g.requests::numeric / t.n, 4)::float8 as share
    from grouped g join totals t on t.model is not distinct from g.model
    order by g.requests desc, g.model, g.route, g.reason`;
  const groups = (await db.raw<{ rows: OffloadGroup[] }>(sql, bindings)).rows;
  const total = (await db.raw<{ rows: Array<{ n: number }> }>(`select count(*)::int as n from api_logs where ${where.join(' and ')}`, bindings)).rows[0]?.n ?? 0;
  const offloaded = groups.reduce((n, g) => n + g.requests, 0);
  return {
    days: query.days, total_requests: total, offloaded_requests: offloaded,
    share: total === 0 ? 0 : Math.round((offloaded / total) * 1e4) / 1e4, offloads: groups,
  };
}

async function clearErrors(db: Db, body: z.infer<typeof clearErrorsBodySchema>): Promise<number> {
  const query = db('api_logs')
    .where('created_at', '>=', db.raw('now() - make_interval(days => ?)', [body.days]))
    .andWhere((q) => void q.where('status', '>=', 400).orWhereNotNull('error_code'));
  if (body.model !== undefined) void query.andWhere('model', body.model);
  return query.delete();
}

/** The `/admin/recent-requests/*` router. */
export function recentRequestsRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/admin/recent-requests' });
  const admin = adminRoute(deps);
  router.get('/offloads', admin, async (ctx) => {
    const query = adminQuery(offloadsQuerySchema, ctx.query);
    ctx.body = await offloads(adminDb(deps.database.db), query);
  });
  router.post('/clear-errors', admin, async (ctx) => {
    const body = validateBody(clearErrorsBodySchema, (await readJsonBody(ctx.req, 64 * 1024)) ?? {});
    const deleted = await clearErrors(adminDb(deps.database.db), body);
    ctx.state.log.info({ event: 'recent_errors_cleared', deleted, days: body.days, model: body.model ?? null, admin: ctx.state.admin?.via }, 'recent error rows deleted');
    ctx.body = { deleted };
  });
  documentRoute(router, 'GET', '/offloads', { query: offloadsQuerySchema, summary: 'Requests served by an offload route.' });
  documentRoute(router, 'POST', '/clear-errors', { body: clearErrorsBodySchema, summary: 'Deletes recent error rows of the request log.' });
  return router;
}
