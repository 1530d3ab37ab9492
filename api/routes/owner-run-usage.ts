/**
 * `GET /v1/agent/usage/runs?days=7|30` (owner auth; run cost, tokens and turns by day and
 * model over windows of 7 or 30 UTC days; docs/agent-api.md "Run usage"): the
 * owner's turns, inference requests, tokens and cost per UTC day and model, every day of the window
 * present. `days` defaults to 7; anything but `7` or `30` is a 400 naming it. Never names a host,
 * container, image or generation.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { runUsage } from '../../agent/usage/run-usage';
import { parseUsageDays } from '../../agent/usage/usage-window';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

export function ownerRunUsageRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/usage/runs', owner, async (ctx) => {
    const days = parseUsageDays(ctx.query.days);
    ctx.body = await runUsage(deps.db, { ownerId: ownerOf(ctx.state).userId, days });
  });
  return router;
}
