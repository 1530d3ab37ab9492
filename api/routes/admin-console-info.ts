/**
 * `GET /admin/agent/console-info` (operator auth; docs/console.md "Agent operations"): what the
 * operator pages need to link each chat, sandbox and host to its workflow in the Temporal UI: the
 * UI's base URL (`TEMPORAL_UI_URL`) and the namespace the workers use (`TEMPORAL_NAMESPACE`).
 * The console builds `<temporal_ui_url>/namespaces/<namespace>/workflows/<workflowId>` itself.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { requireOperator, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

/** The answer: the Temporal UI's base URL (no trailing slash) and the workers' namespace. */
export interface ConsoleInfo {
  temporal_ui_url: string;
  temporal_namespace: string;
}

/** The console information of these settings (a trailing `/` of the URL is dropped). */
export function consoleInfoOf(settings: { TEMPORAL_UI_URL: string; TEMPORAL_NAMESPACE: string }): ConsoleInfo {
  return { temporal_ui_url: settings.TEMPORAL_UI_URL.replace(/\/+$/, ''), temporal_namespace: settings.TEMPORAL_NAMESPACE };
}

export function adminConsoleInfoRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const operator = requireOperator({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/admin/agent/console-info', operator, (ctx) => {
    ctx.body = consoleInfoOf(deps.settings);
  });
  return router;
}
