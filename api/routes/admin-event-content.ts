/**
 * `POST /admin/agent/runs/:jobId/events/:eventId/content` (operator auth;
 * docs/agent-admin.md "Event content"): one event's stored payload, audited
 * (`agent.run.event_content.read`) before it is returned, capped at 256 KiB with `truncated`.
 * The body is empty or `{}`; anything else is 400, over 1 KiB 413.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import { parseContentIds, readEventContent } from '../../agent/events/event-content';
import type { ApiDeps } from '../deps';

/** Bytes of request body read at most: `{}` with room for whitespace. */
const BODY_LIMIT = 1024;

/** The request takes no fields: an empty body or `{}`. */
const contentBodySchema = z.object({}).strict();

export function adminEventContentRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.post('/admin/agent/runs/:jobId/events/:eventId/content', operator, async (ctx) => {
    const ids = parseContentIds(ctx.params.jobId ?? '', ctx.params.eventId ?? '');
    const body = await readJsonBody(ctx.req, BODY_LIMIT);
    if (body !== undefined) validateBody(contentBodySchema, body);
    ctx.body = await readEventContent(deps.db, ids, operatorAudit(ctx));
  });
  documentRoute(router, 'POST', '/admin/agent/runs/:jobId/events/:eventId/content', { body: contentBodySchema, statuses: [503], summary: "Reveals an event's stored content (audited)." });
  return router;
}
