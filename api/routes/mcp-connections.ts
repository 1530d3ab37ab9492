/**
 * `/v1/agent/mcp/connections…`: an owner's MCP connections (docs/mcp.md "Connections" for the
 * bodies). Owner-scoped: another owner's connection is 404. Credential values are write-only.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { mcpSessionsOf } from '../process-services';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { createConnectionSchema, draftOfCreate, draftsOfImport, importSchema, updateConnectionSchema } from '../../agent/tools/connection-input';
import {
  connectionView, createConnections, deleteConnection, findOwnedConnection, listConnections, updateConnection, type ConnectionStoreOptions,
} from '../../agent/tools/connections';
import { discoverConnection } from '../../agent/tools/discovery';
import { bindConnectorColumns } from '../../agent/tools/connectors';

const BODY_LIMIT = 256 * 1024;

/** The store options from the API's settings. */
export function connectionStoreOptions(deps: ApiDeps): ConnectionStoreOptions {
  return { sealingKey: deps.settings.AGENT_SETTINGS_ENCRYPTION_KEY, templates: deps.settings.AGENT_MCP_STDIO_TEMPLATES, allowPrivate: deps.settings.AGENT_MCP_ALLOW_PRIVATE_NETWORK };
}

export function mcpConnectionsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const options = () => connectionStoreOptions(deps);
  router.get('/v1/agent/mcp/connections', owner, async (ctx) => {
    ctx.body = { connections: (await listConnections(deps.db, ownerOf(ctx.state).userId)).map(connectionView) };
  });
  router.post('/v1/agent/mcp/connections', owner, async (ctx) => {
    const body = validateBody(createConnectionSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const [row] = await createConnections(deps.db, ownerOf(ctx.state).userId, [draftOfCreate(body, options())], options());
    ctx.status = 201;
    ctx.body = connectionView(row!);
  });
  router.post('/v1/agent/mcp/connections/import', owner, async (ctx) => {
    const body = validateBody(importSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const rows = await createConnections(deps.db, ownerOf(ctx.state).userId, draftsOfImport(body, options()), options());
    ctx.status = 201;
    ctx.body = { connections: rows.map(connectionView) };
  });
  router.get('/v1/agent/mcp/connections/:connectionId', owner, async (ctx) => {
    ctx.body = connectionView(await findOwnedConnection(deps.db, ownerOf(ctx.state).userId, ctx.params.connectionId ?? ''));
  });
  router.patch('/v1/agent/mcp/connections/:connectionId', owner, async (ctx) => {
    const body = validateBody(updateConnectionSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const userId = ownerOf(ctx.state).userId;
    const row = await updateConnection(deps.db, userId, ctx.params.connectionId ?? '', body, {
      ...options(), bindConnector: (trx, current, connectorId) => bindConnectorColumns(trx, userId, current, connectorId),
    });
    ctx.body = connectionView(row);
  });
  router.delete('/v1/agent/mcp/connections/:connectionId', owner, async (ctx) => {
    await deleteConnection(deps.db, ownerOf(ctx.state).userId, ctx.params.connectionId ?? '');
    ctx.body = { connection_id: ctx.params.connectionId, deleted: true };
  });
  router.post('/v1/agent/mcp/connections/:connectionId/discover', owner, async (ctx) => {
    const row = await findOwnedConnection(deps.db, ownerOf(ctx.state).userId, ctx.params.connectionId ?? '');
    const updated = await discoverConnection(deps.db, row, {
      pool: mcpSessionsOf(deps), timeoutMs: deps.settings.AGENT_MCP_DISCOVERY_TIMEOUT_SECONDS * 1000, sealingKey: deps.settings.AGENT_SETTINGS_ENCRYPTION_KEY,
    });
    ctx.body = connectionView(updated);
  });
  documentRoute(router, 'POST', '/v1/agent/mcp/connections', { body: createConnectionSchema, success: 201, summary: 'Adds an MCP server connection.' });
  documentRoute(router, 'POST', '/v1/agent/mcp/connections/import', { body: importSchema, success: 201, summary: 'Imports MCP server connections from a client configuration.' });
  documentRoute(router, 'PATCH', '/v1/agent/mcp/connections/:connectionId', { body: updateConnectionSchema, summary: 'Changes a connection.' });
  documentRoute(router, 'POST', '/v1/agent/mcp/connections/:connectionId/discover', { noBody: true, summary: "Lists a connection's tools from its server." });
  return router;
}
