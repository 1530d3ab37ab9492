/**
 * `/v1/agent/mcp/connections/{id}/oauth/…` (docs/mcp.md "OAuth"): the owner authorizes a remote
 * connection whose server wants OAuth. `start` answers the authorization URL (state bound to the
 * owner and the connection, 10 minutes, PKCE S256); the owner's redirect page posts `{code, state}`
 * to `callback` with the owner's own credential. Owner-scoped (another owner's connection is 404);
 * tokens are sealed and never answered.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { mcpSessionsOf } from '../process-services';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { connectionView, findOwnedConnection } from '../../agent/tools/connections';
import { completeConnectionOAuth, startConnectionOAuth, type OAuthOptions } from '../../agent/tools/mcp-oauth';

const BODY_LIMIT = 16 * 1024;

const callbackSchema = z.object({
  code: z.string().min(1).max(2048),
  state: z.string().min(1).max(256),
}).strict();

function oauthOptions(deps: ApiDeps): OAuthOptions {
  return {
    sealingKey: deps.settings.AGENT_SETTINGS_ENCRYPTION_KEY, redirectUrl: deps.settings.AGENT_MCP_OAUTH_REDIRECT_URL,
    fetchFn: mcpSessionsOf(deps).oauthFetch(deps.settings.AGENT_MCP_DISCOVERY_TIMEOUT_SECONDS * 1000),
  };
}

/** The owner's OAuth routes of MCP connections (access: owner, `agent.use`). */
export function mcpOAuthRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.post('/v1/agent/mcp/connections/:connectionId/oauth/start', owner, async (ctx) => {
    const userId = ownerOf(ctx.state).userId;
    const row = await findOwnedConnection(deps.db, userId, ctx.params.connectionId ?? '');
    ctx.set('cache-control', 'no-store');
    ctx.status = 201;
    ctx.body = { connection_id: row.connection_id, ...(await startConnectionOAuth(deps.db, userId, row, oauthOptions(deps))) };
  });
  router.post('/v1/agent/mcp/connections/:connectionId/oauth/callback', owner, async (ctx) => {
    const body = validateBody(callbackSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const userId = ownerOf(ctx.state).userId;
    const row = await findOwnedConnection(deps.db, userId, ctx.params.connectionId ?? '');
    ctx.set('cache-control', 'no-store');
    ctx.body = connectionView(await completeConnectionOAuth(deps.db, userId, row, body, oauthOptions(deps)));
  });
  documentRoute(router, 'POST', '/v1/agent/mcp/connections/:connectionId/oauth/start', { noBody: true, success: 201, summary: "Starts a connection's OAuth authorization." });
  documentRoute(router, 'POST', '/v1/agent/mcp/connections/:connectionId/oauth/callback', { body: callbackSchema, summary: "Completes a connection's OAuth authorization." });
  return router;
}
