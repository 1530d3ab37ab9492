/**
 * The database browser (docs/agent-admin.md "Database browser"), operator only;
 * each request re-reads the operator's account, so a withdrawn `agent.admin` answers 403 at once:
 *
 * - `GET /admin/agent/database/tables`: the visible schema (an allowlist of tables and columns),
 *   the operators each column accepts and the bounds;
 * - `POST /admin/agent/database/query` `{table, columns?, filters?, sort?, limit?, offset?}`: one
 *   page of rows, read in a READ ONLY transaction under the statement timeout
 *   (`AGENT_DATABASE_QUERY_TIMEOUT_MS`). Bad input is a 400 naming the field and runs nothing; a
 *   query cut by the timeout is a 503. Each answered query is audited (`agent.database.query`,
 *   category `database`) before its rows are returned: no audit row, no rows.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { auditBeforeDisclose } from '../../agent/audit/audit-log';
import { browserQuerySchema, planQuery, visibleSchemaView } from '../../agent/database-browser/query-plan';
import { runBrowserQuery } from '../../agent/database-browser/run-query';
import { requireOperator, type AgentState } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 32 * 1024;

export function adminDatabaseBrowserRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get('/admin/agent/database/tables', operator, (ctx) => {
    ctx.body = visibleSchemaView(deps.settings.AGENT_DATABASE_QUERY_TIMEOUT_MS);
  });

  router.post('/admin/agent/database/query', operator, async (ctx) => {
    const plan = planQuery(validateBody(browserQuerySchema, await readJsonBody(ctx.req, BODY_LIMIT)));
    const page = await runBrowserQuery(deps.db, plan, { statementTimeoutMs: deps.settings.AGENT_DATABASE_QUERY_TIMEOUT_MS });
    await auditBeforeDisclose(deps.db, {
      ...operatorAudit(ctx), category: 'database', action: 'agent.database.query', target: { type: 'database_table', id: plan.table },
      outcome: 'succeeded', details: { ...plan.summary, rows: page.rows.length, has_more: page.has_more },
    });
    ctx.body = page;
  });
  documentRoute(router, 'POST', '/admin/agent/database/query', { body: browserQuerySchema, summary: 'Reads rows of a visible table (the database browser).' });
  return router;
}
