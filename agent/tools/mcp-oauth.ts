/**
 * OAuth for remote MCP connections (docs/mcp.md "OAuth"), with the official SDK's client
 * OAuth functions. `start` discovers the server's authorization server (RFC 9728 / 8414), registers
 * a client (RFC 7591) for the configured redirect page and answers the authorization URL, with an
 * unpredictable state (stored as its SHA-256, bound to the owner and the connection, 10 minutes,
 * consumed once) and a PKCE S256 challenge; the verifier and client are sealed in the state row.
 * `callback` consumes the state and exchanges the code; the tokens are sealed on the connection
 * (never shown) and refreshed, under a row lock, when they expire within a minute.
 */
import { randomBytes } from 'node:crypto';
import {
  discoverOAuthServerInfo, exchangeAuthorization, refreshAuthorization, registerClient, startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { hashSecret } from '../../lib/crypto';
import { cleanText } from '../../lib/text';
import type { SecretSealer } from '../../lib/sealed-secret';
import { sealerOr503, type ConnectionRow } from './connections';

/** Lifetime of an OAuth state (10 minutes, like account linking's). */
export const OAUTH_STATE_TTL_SECONDS = 600;
/** A token expiring within this is refreshed before use. */
const REFRESH_MARGIN_MS = 60_000;

interface OAuthServer {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  client: OAuthClientInformationMixed;
  resource: string | null;
}
interface Flow extends OAuthServer {
  verifier: string;
  redirectUrl: string;
}
interface Grant extends OAuthServer {
  accessToken: string;
  refreshToken: string | null;
  /** Epoch milliseconds, or null when the server gave no lifetime. */
  expiresAt: number | null;
}

/** What the OAuth steps need: the sealing key, the redirect page, and a bounded fetch (no redirects, private hosts only when allowed, a deadline). */
export interface OAuthOptions {
  sealingKey: string | undefined;
  redirectUrl?: string | undefined;
  fetchFn: typeof fetch;
}

const flowName = (stateHash: string) => `mcp-oauth-state:${stateHash}`;
const grantName = (connectionId: string) => `mcp-connection-oauth:${connectionId}`;
/** An upstream failure's reason, as untrusted text: cleaned and cut. */
const reason = (err: unknown) => cleanText((err instanceof Error ? err.message : String(err)).slice(0, 300));

/** The relay's answer for a connection whose server wants OAuth it does not hold (or no longer accepts). */
export function needsAuthorization(row: Pick<ConnectionRow, 'name' | 'connection_id'>, why = 'needs OAuth authorization'): AppError {
  return new AppError('conflict', `The MCP server of '${row.name}' ${why}: the owner must authorize the connection (POST /v1/agent/mcp/connections/${row.connection_id}/oauth/start).`);
}

function remoteUrlOf(row: ConnectionRow): string {
  if (row.transport !== 'streamable_http' || row.endpoint_url === null) throw new AppError('invalid_request', 'Only a remote (URL) connection can be authorized with OAuth');
  if (row.connector_id !== null) throw new AppError('conflict', `Connection '${row.name}' is bound to a connector`);
  return row.endpoint_url;
}

const upstream = (row: ConnectionRow, what: string, err?: unknown) =>
  new AppError('upstream_error', `The MCP server of '${row.name}' ${what}${err === undefined ? '' : `: ${reason(err)}`}`, { expose: true, ...(err === undefined ? {} : { cause: err }) });

/** Starts authorizing `row` for its owner: the authorization URL the owner's browser opens, and when its state expires. */
export async function startConnectionOAuth(db: Db, ownerId: number, row: ConnectionRow, options: OAuthOptions): Promise<{ authorization_url: string; expires_at: string }> {
  const serverUrl = remoteUrlOf(row);
  const redirectUrl = options.redirectUrl;
  if (!redirectUrl) throw new AppError('service_unavailable', 'OAuth for MCP connections is not configured: AGENT_MCP_OAUTH_REDIRECT_URL is not set on the control-plane API');
  const sealer = sealerOr503(options.sealingKey);
  let info;
  try {
    info = await discoverOAuthServerInfo(serverUrl, { fetchFn: options.fetchFn });
  } catch (err) {
    throw upstream(row, 'offers no usable OAuth metadata', err);
  }
  const metadata = info.authorizationServerMetadata;
  if (!metadata) throw upstream(row, 'publishes no OAuth authorization server metadata');
  const resource = info.resourceMetadata?.resource ?? null;
  let client: OAuthClientInformationMixed;
  try {
    client = await registerClient(info.authorizationServerUrl, {
      metadata, fetchFn: options.fetchFn,
      clientMetadata: { redirect_uris: [redirectUrl], client_name: 'Agent control plane MCP relay', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    });
  } catch (err) {
    throw upstream(row, 'could not register an OAuth client', err);
  }
  const state = randomBytes(32).toString('base64url');
  const stateHash = hashSecret(state);
  let started;
  try {
    started = await startAuthorization(info.authorizationServerUrl, { metadata, clientInformation: client, redirectUrl, state, ...(resource ? { resource } : {}) });
  } catch (err) {
    throw upstream(row, 'cannot be authorized (its authorization server does not support PKCE S256)', err);
  }
  const flow: Flow = { authorizationServerUrl: info.authorizationServerUrl, metadata, client, resource, verifier: started.codeVerifier, redirectUrl };
  const [inserted] = await db('agent_mcp_oauth_states').insert({
    state_hash: stateHash, user_id: ownerId, connection_id: row.connection_id, flow_sealed: sealer.seal(flowName(stateHash), JSON.stringify(flow)),
    expires_at: db.raw(`now() + interval '${OAUTH_STATE_TTL_SECONDS} seconds'`),
  }).returning<Array<{ expires_at: Date }>>('expires_at');
  await db('agent_mcp_oauth_states').where('expires_at', '<', db.raw(`now() - interval '1 day'`)).delete();
  return { authorization_url: started.authorizationUrl.toString(), expires_at: inserted!.expires_at.toISOString() };
}

interface StateRow {
  user_id: string;
  connection_id: string;
  expired: boolean;
  consumed_at: Date | null;
}

function refusal(row: StateRow | undefined, ownerId: number, connectionId: string): AppError {
  const why = !row ? 'is unknown'
    : Number(row.user_id) !== ownerId ? 'was not issued to you'
      : row.connection_id !== connectionId ? 'was issued for another connection'
        : row.consumed_at ? 'was already used'
          : row.expired ? `expired (a state is valid for ${OAUTH_STATE_TTL_SECONDS / 60} minutes)` : 'cannot be used';
  return new AppError('invalid_request', `The OAuth state ${why}; start authorizing again`, { param: 'state' });
}

function grantOf(server: OAuthServer, tokens: OAuthTokens, previousRefresh: string | null): Grant {
  return {
    authorizationServerUrl: server.authorizationServerUrl, metadata: server.metadata, client: server.client, resource: server.resource,
    accessToken: tokens.access_token, refreshToken: tokens.refresh_token ?? previousRefresh,
    expiresAt: typeof tokens.expires_in === 'number' ? Date.now() + tokens.expires_in * 1000 : null,
  };
}

function grantColumns(sealer: SecretSealer, connectionId: string, grant: Grant): Record<string, unknown> {
  return { oauth_sealed: sealer.seal(grantName(connectionId), JSON.stringify(grant)), oauth_expires_at: grant.expiresAt === null ? null : new Date(grant.expiresAt) };
}

/**
 * Completes authorizing `row` with the `code` and `state` the owner's page received: the state is
 * consumed once (400 naming why otherwise, nothing changed), the code exchanged with its PKCE
 * verifier (502 when refused), and the tokens sealed on the connection.
 */
export async function completeConnectionOAuth(db: Db, ownerId: number, row: ConnectionRow, input: { code: string; state: string }, options: OAuthOptions): Promise<ConnectionRow> {
  remoteUrlOf(row);
  const sealer = sealerOr503(options.sealingKey);
  const stateHash = hashSecret(input.state);
  const [consumed] = await db('agent_mcp_oauth_states')
    .where({ state_hash: stateHash, user_id: ownerId, connection_id: row.connection_id })
    .whereNull('consumed_at').where('expires_at', '>', db.fn.now())
    .update({ consumed_at: db.fn.now() })
    .returning<Array<{ flow_sealed: string }>>('flow_sealed');
  if (!consumed) {
    const found = await db('agent_mcp_oauth_states').where({ state_hash: stateHash })
      .first<StateRow | undefined>('user_id', 'connection_id', 'consumed_at', db.raw('expires_at <= now() as expired'));
    throw refusal(found, ownerId, row.connection_id);
  }
  const flow = JSON.parse(sealer.open(flowName(stateHash), consumed.flow_sealed)) as Flow;
  let tokens: OAuthTokens;
  try {
    tokens = await exchangeAuthorization(flow.authorizationServerUrl, {
      metadata: flow.metadata, clientInformation: flow.client, authorizationCode: input.code, codeVerifier: flow.verifier,
      redirectUri: flow.redirectUrl, fetchFn: options.fetchFn, ...(flow.resource ? { resource: new URL(flow.resource) } : {}),
    });
  } catch (err) {
    throw upstream(row, 'refused the authorization code (start authorizing again)', err);
  }
  const [updated] = await db('agent_mcp_connections').where({ connection_id: row.connection_id })
    .update({ ...grantColumns(sealer, row.connection_id, grantOf(flow, tokens, null)), oauth_authorized_at: db.fn.now() })
    .returning<ConnectionRow[]>('*');
  return updated!;
}

const fresh = (grant: Grant) => grant.expiresAt === null || grant.expiresAt - Date.now() > REFRESH_MARGIN_MS;

/**
 * The connection's access token (null without an OAuth grant). One expiring within a minute is first
 * refreshed under a row lock (so two calls do not spend one refresh token twice); `waited` says the
 * caller waited for a refresh (its own or another's) and must re-check what it holds. A refused
 * refresh is `needsAuthorization`.
 */
export async function oauthAccessToken(db: Db, row: ConnectionRow, options: OAuthOptions): Promise<{ token: string; waited: boolean } | null> {
  if (row.oauth_sealed === null) return null;
  const sealer = sealerOr503(options.sealingKey);
  const open = (sealed: string) => JSON.parse(sealer.open(grantName(row.connection_id), sealed)) as Grant;
  const grant = open(row.oauth_sealed);
  if (fresh(grant)) return { token: grant.accessToken, waited: false };
  return db.transaction(async (trx) => {
    const locked = await trx('agent_mcp_connections').where({ connection_id: row.connection_id }).forUpdate().first<{ oauth_sealed: string | null } | undefined>('oauth_sealed');
    if (!locked?.oauth_sealed) throw needsAuthorization(row);
    const current = open(locked.oauth_sealed);
    if (fresh(current)) return { token: current.accessToken, waited: true };
    if (current.refreshToken === null) throw needsAuthorization(row, 'has an expired OAuth token and no refresh token');
    let tokens: OAuthTokens;
    try {
      tokens = await refreshAuthorization(current.authorizationServerUrl, {
        metadata: current.metadata, clientInformation: current.client, refreshToken: current.refreshToken, fetchFn: options.fetchFn,
        ...(current.resource ? { resource: new URL(current.resource) } : {}),
      });
    } catch (err) {
      throw needsAuthorization(row, `refused to refresh its OAuth token (${reason(err)})`);
    }
    const next = grantOf(current, tokens, current.refreshToken);
    await trx('agent_mcp_connections').where({ connection_id: row.connection_id }).update(grantColumns(sealer, row.connection_id, next));
    return { token: next.accessToken, waited: true };
  });
}
