/**
 * Owner usage routes for the settings usage page (`/settings/usage`; docs/agent-api.md
 * "Usage"), owner auth (`agent.use`), windows of 7 or 30 UTC days (`days`, default 7; anything else
 * 400 naming `days`). None names a host, container id, image or generation.
 * - `GET /v1/agent/usage/containers`: the owner's sandboxes with their latest reading and running
 *   time in the window.
 * - `GET /v1/agent/usage/containers/daily`: running time per UTC day, every day of the window.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { listOwnerContainers, ownerDailyUsage } from '../../agent/usage/container-usage';
import { parseUsageDays } from '../../agent/usage/usage-window';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../deps';

export function ownerUsageRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/usage/containers', owner, async (ctx) => {
    const days = parseUsageDays(ctx.query.days);
    ctx.body = { days, containers: await listOwnerContainers(deps.db, ownerOf(ctx.state).userId, days) };
  });
  router.get('/v1/agent/usage/containers/daily', owner, async (ctx) => {
    ctx.body = await ownerDailyUsage(deps.db, ownerOf(ctx.state).userId, parseUsageDays(ctx.query.days));
  });
  return router;
}
