/**
 * Host runner grant route: `POST /v1/agent/hosts/:hostId/attempts/:attemptId/grant` with the
 * host credential → `{grant_id, token, expires_at, model}` (docs/agent-grants.md).
 */
import Router from '@koa/router';
import { bearerToken } from '../../lib/http/json-body';
import type { RequestState } from '../../lib/http/request-context';
import type { ApiDeps } from '../app';
import { grantClientOr503, issueHostGrant } from '../grants/host-grant';
import { authenticateHost } from '../hosts/host-registry';

export function hostGrantRouter(deps: ApiDeps): Router<RequestState> {
  const router = new Router<RequestState>();
  router.post('/v1/agent/hosts/:hostId/attempts/:attemptId/grant', async (ctx) => {
    const hostId = await authenticateHost(deps.db, ctx.params.hostId ?? '', bearerToken(ctx.get('authorization') || undefined));
    const grants = grantClientOr503(deps.grants);
    const issued = await issueHostGrant({ db: deps.db, grants, settings: deps.settings, hostId, attemptId: ctx.params.attemptId ?? '' });
    ctx.state.log.info({ event: 'agent_host_grant_fetched', host_id: hostId, grant_id: issued.grant_id }, 'host fetched its turn grant');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });
  return router;
}
