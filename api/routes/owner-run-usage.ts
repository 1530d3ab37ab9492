/**
 * `GET /v1/agent/usage/runs?days=7|30` (owner auth; spec 4.4 "run cost/tokens/turns by day and
 * model", spec 8 "usage page windows 7 or 30 UTC days"; docs/agent-api.md "Run usage"): the
 * owner's turns, inference requests, tokens and cost per UTC day and model, every day of the window
 * present. `days` defaults to 7; anything but `7` or `30` is a 400 naming it. Never names a host,
 * container, image or generation.
 */
import type Router from '@koa/router';
import { AppError } from '../../lib/errors';
import { createRouter } from '../../lib/http/route-access';
import { RUN_USAGE_WINDOWS, runUsage, type RunUsageWindow } from '../../agent/usage/run-usage';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import type { ApiDeps } from '../app';

/** The window named by the `days` query value (absent → 7), or a 400 naming `days`. */
function windowOf(raw: string | string[] | undefined): RunUsageWindow {
  if (raw === undefined) return 7;
  const found = RUN_USAGE_WINDOWS.find((days) => raw === String(days));
  if (found === undefined) throw new AppError('invalid_request', `Invalid query parameter 'days': use ${RUN_USAGE_WINDOWS.join(' or ')}`, { param: 'days' });
  return found;
}

export function ownerRunUsageRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/usage/runs', owner, async (ctx) => {
    const days = windowOf(ctx.query.days);
    ctx.body = await runUsage(deps.db, { ownerId: ownerOf(ctx.state).userId, days });
  });
  return router;
}
