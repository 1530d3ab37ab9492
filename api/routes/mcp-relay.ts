/**
 * The tool relay's surface (docs/mcp.md "The relay"), every route guarded by a relay credential:
 * `GET /v1/agent/mcp/relay/tools` and `POST /v1/agent/mcp/relay/call` (a small JSON API for the
 * built-in driver), and `POST /v1/agent/mcp/relay/mcp`, an MCP streamable-HTTP endpoint (stateless,
 * JSON answers) for the coding CLIs' own MCP clients, serving the same tools and calls.
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { mcpSessionsOf } from '../process-services';
import { relayOf, requireRelay, type RelayState } from '../auth/relay-principal';
import { relayCall, relayTools, type RelayDeps } from '../../agent/tools/relay';
import { chatCatalog } from '../../agent/tools/relay-catalog';
import type { RelayPrincipal } from '../../agent/tools/relay-credentials';

/** Largest relay request body (a call's arguments). */
const BODY_LIMIT = 1024 * 1024;

const callSchema = z.object({
  tool: z.string().min(1).max(200),
  arguments: z.record(z.string(), z.unknown()).default({}),
  tool_use_id: z.string().min(1).max(200).optional(),
}).strict();

function relayDeps(deps: ApiDeps): RelayDeps {
  return {
    db: deps.db, pool: mcpSessionsOf(deps), sealingKey: deps.settings.AGENT_SETTINGS_ENCRYPTION_KEY, staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS,
    callTimeoutSeconds: deps.settings.AGENT_MCP_CALL_TIMEOUT_SECONDS, approvalWaitSeconds: deps.settings.AGENT_MCP_APPROVAL_WAIT_SECONDS,
  };
}

/** An MCP server (one per request: the endpoint is stateless) over the chat's catalog and the relay's calls. */
function relayMcpServer(deps: ApiDeps, relay: { principal: RelayPrincipal; token: string }): Server {
  const server = new Server({ name: 'agent-tool-relay', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const catalog = await chatCatalog(deps.db, relay.principal.jobId);
    return { tools: catalog.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: { ...t.input_schema, type: 'object' as const } })) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const out = await relayCall(relayDeps(deps), relay.token, relay.principal, { tool: request.params.name, arguments: request.params.arguments ?? {} });
    return { content: [{ type: 'text' as const, text: out.output }], isError: out.is_error };
  });
  return server;
}

export function mcpRelayRouter(deps: ApiDeps): Router<RelayState> {
  const router = createRouter<RelayState>();
  const relay = requireRelay(deps.db, () => deps.settings.AGENT_HOST_STALE_SECONDS);
  router.get('/v1/agent/mcp/relay/tools', relay, async (ctx) => {
    ctx.set('cache-control', 'no-store');
    ctx.body = await relayTools(deps.db, relayOf(ctx.state).principal);
  });
  router.post('/v1/agent/mcp/relay/call', relay, async (ctx) => {
    const body = validateBody(callSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const { principal, token } = relayOf(ctx.state);
    ctx.body = await relayCall(relayDeps(deps), token, principal, { tool: body.tool, arguments: body.arguments, ...(body.tool_use_id ? { toolUseId: body.tool_use_id } : {}) });
  });
  router.post('/v1/agent/mcp/relay/mcp', relay, async (ctx) => {
    const body = await readJsonBody(ctx.req, BODY_LIMIT);
    const server = relayMcpServer(deps, relayOf(ctx.state));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    ctx.respond = false;
    ctx.res.on('close', () => void server.close());
    await transport.handleRequest(ctx.req, ctx.res, body);
  });
  documentRoute(router, 'POST', '/v1/agent/mcp/relay/call', { body: callSchema, summary: 'Calls a tool of the chat (tool relay).' });
  documentRoute(router, 'POST', '/v1/agent/mcp/relay/mcp', { bodyText: 'A JSON-RPC message of the MCP streamable HTTP transport.', summary: "The chat's tools as one MCP server (streamable HTTP)." });
  return router;
}
