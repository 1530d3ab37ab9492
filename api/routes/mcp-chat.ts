/**
 * A chat's MCP tools (owner routes; docs/mcp.md "Bindings and approvals"):
 * `GET|PUT /v1/agent/mcp/chats/:jobId/bindings`, `GET|POST /v1/agent/mcp/chats/:jobId/approvals`.
 * Another owner's chat is 404.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { approvalSchema, bindingsSchema, decideApproval, listApprovals, listBindings, setBindings } from '../../agent/tools/chat-tools';

export function mcpChatRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/mcp/chats/:jobId/bindings', owner, async (ctx) => {
    ctx.body = await listBindings(deps.db, ownerOf(ctx.state).userId, ctx.params.jobId ?? '');
  });
  router.put('/v1/agent/mcp/chats/:jobId/bindings', owner, async (ctx) => {
    const body = validateBody(bindingsSchema, await readJsonBody(ctx.req, 64 * 1024));
    ctx.body = await setBindings(deps.db, ownerOf(ctx.state).userId, ctx.params.jobId ?? '', body);
  });
  router.get('/v1/agent/mcp/chats/:jobId/approvals', owner, async (ctx) => {
    ctx.body = await listApprovals(deps.db, ownerOf(ctx.state).userId, ctx.params.jobId ?? '', ctx.query.pending === 'true');
  });
  router.post('/v1/agent/mcp/chats/:jobId/approvals', owner, async (ctx) => {
    const body = validateBody(approvalSchema, await readJsonBody(ctx.req, 16 * 1024));
    ctx.body = await decideApproval(deps.db, ownerOf(ctx.state).userId, ctx.params.jobId ?? '', body);
  });
  documentRoute(router, 'PUT', '/v1/agent/mcp/chats/:jobId/bindings', { body: bindingsSchema, summary: "Sets a chat's tool connections." });
  documentRoute(router, 'POST', '/v1/agent/mcp/chats/:jobId/approvals', { body: approvalSchema, summary: 'Decides a tool approval.' });
  return router;
}
