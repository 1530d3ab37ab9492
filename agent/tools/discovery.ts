/**
 * Discovery (docs/mcp.md "Discovery"): the relay connects to a connection's server with the SDK,
 * lists its tools and stores the bounded, cleaned capability snapshot. A failure is stored as the
 * connection's `discovery_error` (cleaned, cut) and answered 502 in the API's own words.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';
import { createHash } from 'node:crypto';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { openSecrets, type ConnectionRow } from './connections';
import { needsAuthorization, oauthAccessToken, type OAuthOptions } from './mcp-oauth';
import type { McpSessionPool, McpTarget } from './mcp-sessions';

/** Why a server could not be used, as shown to its owner: the error's message, cleaned and cut (never a credential: the relay's own messages hold none). */
export function failureText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return cleanText(message.slice(0, 500));
}

/** The session target of a connection for one chat (or `discovery`). */
export function targetOf(row: ConnectionRow, scope: string, sealingKey: string | undefined): McpTarget {
  if (row.location === 'connector' || row.connector_id !== null) {
    throw new AppError('conflict', `Connection '${row.name}' is bound to a connector, and connector runtimes are unavailable on this deployment`);
  }
  return {
    key: `${row.connection_id}:${row.updated_at.getTime()}:${scope}`,
    transport: row.transport === 'stdio' ? 'stdio' : 'streamable_http',
    endpointUrl: row.endpoint_url,
    launch: row.launch,
    secrets: openSecrets(row, sealingKey),
  };
}

/**
 * The session target with the connection's OAuth access token (refreshed first when it expires):
 * `waited` says a refresh was waited for, after which the relay re-checks its credential. The
 * token's digest is part of the session key, so a new token opens a new session.
 */
export async function resolveTarget(db: Db, row: ConnectionRow, scope: string, options: OAuthOptions): Promise<{ target: McpTarget; waited: boolean }> {
  const target = targetOf(row, scope, options.sealingKey);
  const access = await oauthAccessToken(db, row, options);
  if (!access) return { target, waited: false };
  const digest = createHash('sha256').update(access.token).digest('hex').slice(0, 16);
  target.key = `${target.key}:${digest}`;
  target.secrets = { ...target.secrets, headers: { ...target.secrets.headers, authorization: `Bearer ${access.token}` } };
  return { target, waited: access.waited };
}

/** The server refused the relay (HTTP 401): the connection needs (new) OAuth authorization by its owner. */
export function asAuthorizationError(row: ConnectionRow, err: unknown): unknown {
  if (err instanceof StreamableHTTPError && err.code === 401) {
    return needsAuthorization(row, row.oauth_sealed === null ? 'needs OAuth authorization' : 'refused its OAuth token');
  }
  return err;
}

/** Discovers the connection's tools and stores the snapshot; 502 (with the reason stored) when the server fails. */
export async function discoverConnection(db: Db, row: ConnectionRow, options: { pool: McpSessionPool; timeoutMs: number; sealingKey: string | undefined }): Promise<ConnectionRow> {
  const { target } = await resolveTarget(db, row, 'discovery', { sealingKey: options.sealingKey, fetchFn: options.pool.oauthFetch(options.timeoutMs) });
  try {
    const snapshot = await options.pool.discover(target, options.timeoutMs);
    const [updated] = await db('agent_mcp_connections').where({ connection_id: row.connection_id })
      .update({ capabilities: JSON.stringify(snapshot), discovered_at: db.fn.now(), discovery_error: null }).returning<ConnectionRow[]>('*');
    return updated!;
  } catch (caught) {
    const err = asAuthorizationError(row, caught);
    const reason = failureText(err);
    await db('agent_mcp_connections').where({ connection_id: row.connection_id }).update({ discovery_error: reason });
    throw new AppError('upstream_error', `The MCP server of '${row.name}' could not be discovered: ${reason}`, { expose: true, cause: err });
  }
}
