/**
 * Host runner grant route: `POST /v1/agent/hosts/:hostId/attempts/:attemptId/grant` with the
 * host credential → `{grant_id, token, expires_at, model}` (docs/agent-grants.md; the contract:
 * lib/contracts/host-api.ts). The body is not read.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import type { ApiDeps } from '../deps';
import { grantClientOr503, issueHostGrant } from '../../agent/grants/host-grant';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import * as hostApi from '../../lib/contracts/host-api';

export function hostGrantRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post(hostApi.attemptGrant.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const grants = grantClientOr503(deps.grants);
    const issued = await issueHostGrant({ db: deps.db, grants, settings: deps.settings, hostId, attemptId: ctx.params.attemptId ?? '', log: ctx.state.log });
    ctx.state.log.info({ event: 'agent_host_grant_fetched', host_id: hostId, grant_id: issued.grant_id }, 'host fetched its turn grant');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });
  documentEndpoint(router, hostApi.attemptGrant);
  return router;
}
