/**
 * Host runner tool-relay credentials: `POST /v1/agent/hosts/:hostId/attempts/:attemptId/tool-credentials`
 * with the host credential → `{mcp_token, residency_credential, expires_at, relay_mcp_path}`
 * (docs/mcp.md "Relay credentials"; the contract: lib/contracts/host-api.ts). Fetching again rotates
 * both. 409 `Attempt is not current` unless the attempt is this host's running one in a live residency.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint } from '../../lib/http/route-docs';
import type { ApiDeps } from '../deps';
import { hostOf, requireHost, type AgentState } from '../auth/principals';
import * as hostApi from '../../lib/contracts/host-api';
import { issueToolCredentials } from '../../agent/tools/relay-credentials';

export function hostToolCredentialsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  router.post(hostApi.attemptToolCredentials.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const issued = await issueToolCredentials(deps.db, {
      hostId, attemptId: ctx.params.attemptId ?? '', staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, turnTimeLimitSeconds: deps.settings.AGENT_TURN_TIME_LIMIT_SECONDS,
    });
    ctx.state.log.info({ event: 'agent_tool_credentials_issued', host_id: hostId, attempt_id: ctx.params.attemptId }, 'host fetched its tool relay credentials');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });
  documentEndpoint(router, hostApi.attemptToolCredentials);
  return router;
}
