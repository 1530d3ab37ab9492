/**
 * `GET /admin/agent/audit-log` (operator auth; docs/agent-audit.md): the agent audit
 * log newest first; query `category` (one of the audit categories), `before` (the oldest id of
 * the previous page), `limit` (1..200, default 50). Other query parameters are refused with 400.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { validateBody } from '../../lib/http/json-body';
import { AppError } from '../../lib/errors';
import { requireOperator, type AgentState } from '../auth/principals';
import { auditQuerySchema, listAuditLog } from '../../agent/audit/audit-query';
import type { ApiDeps } from '../deps';

export function adminAuditLogRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/audit-log', operator, async (ctx) => {
    for (const [name, value] of Object.entries(ctx.query)) {
      if (Array.isArray(value)) throw new AppError('invalid_request', `Invalid query parameter '${name}': give it once`, { param: name });
    }
    ctx.body = await listAuditLog(deps.db, validateBody(auditQuerySchema, ctx.query));
  });
  documentRoute(router, 'GET', '/admin/agent/audit-log', { query: auditQuerySchema, summary: 'The audit log, newest first.' });
  return router;
}
