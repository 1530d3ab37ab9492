/**
 * Host runner reads of an admitted attempt: `GET /v1/agent/hosts/:hostId/attempts/:attemptId/context`
 * with the host's credential (the contract: lib/contracts/host-api.ts). 409 `Attempt is not current`
 * once the attempt has ended or moved.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import type { ApiDeps } from '../app';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import { attemptContext } from '../../agent/jobs/attempt-context';
import * as hostApi from '../../lib/contracts/host-api';

export function hostAttemptsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.get(hostApi.attemptContext.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    ctx.set('cache-control', 'no-store');
    ctx.body = await attemptContext(deps.db, { hostId, attemptId: ctx.params.attemptId ?? '', turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS });
  });
  return router;
}
