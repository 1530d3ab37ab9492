/**
 * Host runner reads of an admitted attempt: `GET /v1/agent/hosts/:hostId/attempts/:attemptId/context`
 * with the host's credential. 409 `Attempt is not current` once the attempt has ended or moved.
 */
import Router from '@koa/router';
import { bearerToken } from '../../lib/http/json-body';
import type { RequestState } from '../../lib/http/request-context';
import type { ApiDeps } from '../app';
import { authenticateHost } from '../hosts/host-registry';
import { attemptContext } from '../jobs/attempt-context';

export function hostAttemptsRouter(deps: ApiDeps): Router<RequestState> {
  const router = new Router<RequestState>();
  router.get('/v1/agent/hosts/:hostId/attempts/:attemptId/context', async (ctx) => {
    const hostId = await authenticateHost(deps.db, ctx.params.hostId ?? '', bearerToken(ctx.get('authorization') || undefined));
    ctx.set('cache-control', 'no-store');
    ctx.body = await attemptContext(deps.db, { hostId, attemptId: ctx.params.attemptId ?? '', turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS });
  });
  return router;
}
