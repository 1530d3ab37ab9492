/**
 * `/v1/agent/mcp/connectors…` (owner routes; docs/mcp.md "Connectors"): register (the secret is in
 * the 201 answer only), list, read, rename, revoke, and bind or unbind a stdio connection.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import {
  bindConnectorColumns, connectorNameSchema, connectorView, findOwnedConnector, listConnectors, registerConnector, renameConnector, revokeConnector,
} from '../../agent/tools/connectors';
import { connectionView, updateConnection } from '../../agent/tools/connections';
import { connectionStoreOptions } from './mcp-connections';

export function mcpConnectorsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/v1/agent/mcp/connectors', owner, async (ctx) => {
    ctx.body = await listConnectors(deps.db, ownerOf(ctx.state).userId);
  });
  router.post('/v1/agent/mcp/connectors', owner, async (ctx) => {
    const body = validateBody(connectorNameSchema, await readJsonBody(ctx.req, 16 * 1024));
    ctx.set('cache-control', 'no-store');
    ctx.status = 201;
    ctx.body = await registerConnector(deps.db, ownerOf(ctx.state).userId, body.name);
  });
  router.get('/v1/agent/mcp/connectors/:connectorId', owner, async (ctx) => {
    ctx.body = connectorView(await findOwnedConnector(deps.db, ownerOf(ctx.state).userId, ctx.params.connectorId ?? ''));
  });
  router.patch('/v1/agent/mcp/connectors/:connectorId', owner, async (ctx) => {
    const body = validateBody(connectorNameSchema, await readJsonBody(ctx.req, 16 * 1024));
    ctx.body = await renameConnector(deps.db, ownerOf(ctx.state).userId, ctx.params.connectorId ?? '', body.name);
  });
  router.post('/v1/agent/mcp/connectors/:connectorId/revoke', owner, async (ctx) => {
    ctx.body = await revokeConnector(deps.db, ownerOf(ctx.state).userId, ctx.params.connectorId ?? '');
  });
  /** Binds (`unbind`: unbinds) the connection of the path to the connector of the path. */
  const bind = async (ctx: { state: AgentState; params: Record<string, string>; body?: unknown }, unbind: boolean) => {
    const userId = ownerOf(ctx.state).userId;
    const connector = await findOwnedConnector(deps.db, userId, ctx.params.connectorId ?? '');
    const row = await updateConnection(deps.db, userId, ctx.params.connectionId ?? '', { connector_id: unbind ? null : connector.connector_id }, {
      ...connectionStoreOptions(deps), bindConnector: (trx, current, id) => bindConnectorColumns(trx, userId, current, id),
    });
    ctx.body = connectionView(row);
  };
  router.put('/v1/agent/mcp/connectors/:connectorId/connections/:connectionId', owner, (ctx) => bind(ctx, false));
  router.delete('/v1/agent/mcp/connectors/:connectorId/connections/:connectionId', owner, (ctx) => bind(ctx, true));
  documentRoute(router, 'POST', '/v1/agent/mcp/connectors', { body: connectorNameSchema, success: 201, summary: 'Creates a connector.' });
  documentRoute(router, 'PATCH', '/v1/agent/mcp/connectors/:connectorId', { body: connectorNameSchema, summary: 'Renames a connector.' });
  documentRoute(router, 'POST', '/v1/agent/mcp/connectors/:connectorId/revoke', { noBody: true, summary: 'Revokes a connector.' });
  documentRoute(router, 'PUT', '/v1/agent/mcp/connectors/:connectorId/connections/:connectionId', { noBody: true, summary: 'Binds a connection to a connector.' });
  return router;
}
