/**
 * A real OAuth-protected MCP streamable-HTTP server on loopback, built from the official SDK's own
 * pieces: `mcpAuthRouter` (authorization server metadata, dynamic client registration, authorize,
 * token with PKCE S256 checked by the SDK) and `requireBearerAuth` in front of an `McpServer`
 * (stateless). The in-memory provider approves every authorization at once (redirecting to the
 * client's redirect URI with a code), issues single-use codes and rotating single-use refresh
 * tokens, revokes the old access token on refresh, and counts what it was asked.
 */
import express from 'express';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

const token = () => randomBytes(24).toString('base64url');

/** The in-memory authorization server (and token verifier) of the test server. */
class TestOAuthProvider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  private readonly codes = new Map<string, { clientId: string; challenge: string; redirectUri: string }>();
  private readonly access = new Map<string, { clientId: string; expiresAt: number }>();
  private readonly refresh = new Map<string, string>();
  /** Lifetime of the access tokens issued from now on, seconds. */
  accessTtlSeconds = 3600;
  /** Awaited before a refresh is answered (tests hold the relay inside its wait). */
  beforeRefresh: () => Promise<void> = () => Promise.resolve();
  /** Refuse every refresh (`invalid_grant`), as a server that revoked the grant does. */
  refuseRefresh = false;
  readonly counts = { registrations: 0, codeExchanges: 0, refreshes: 0, refusedTokens: 0 };
  /** Every access and refresh token issued (tests look for them where they must not be). */
  readonly issued: string[] = [];

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: (id) => this.clients.get(id),
      registerClient: (client) => {
        this.counts.registrations += 1;
        const full = client as OAuthClientInformationFull;
        this.clients.set(full.client_id, full);
        return full;
      },
    };
  }

  authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: express.Response): Promise<void> {
    const code = token();
    this.codes.set(code, { clientId: client.client_id, challenge: params.codeChallenge, redirectUri: params.redirectUri });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(302, target.toString());
    return Promise.resolve();
  }

  challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const found = this.codes.get(code);
    if (!found) return Promise.reject(new InvalidGrantError('unknown authorization code'));
    return Promise.resolve(found.challenge);
  }

  private issue(clientId: string): OAuthTokens {
    const accessToken = token();
    const refreshToken = token();
    this.access.set(accessToken, { clientId, expiresAt: Date.now() + this.accessTtlSeconds * 1000 });
    this.refresh.set(refreshToken, clientId);
    this.issued.push(accessToken, refreshToken);
    return { access_token: accessToken, token_type: 'bearer', expires_in: this.accessTtlSeconds, refresh_token: refreshToken };
  }

  exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, _verifier?: string, redirectUri?: string): Promise<OAuthTokens> {
    const found = this.codes.get(code);
    if (!found || found.clientId !== client.client_id || found.redirectUri !== redirectUri) return Promise.reject(new InvalidGrantError('bad authorization code'));
    this.codes.delete(code);
    this.counts.codeExchanges += 1;
    return Promise.resolve(this.issue(client.client_id));
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    await this.beforeRefresh();
    if (this.refuseRefresh || this.refresh.get(refreshToken) !== client.client_id) throw new InvalidGrantError('bad refresh token');
    this.refresh.delete(refreshToken);
    for (const [value, info] of this.access) if (info.clientId === client.client_id) this.access.delete(value);
    this.counts.refreshes += 1;
    return this.issue(client.client_id);
  }

  verifyAccessToken(value: string): Promise<AuthInfo> {
    const found = this.access.get(value);
    if (!found || found.expiresAt <= Date.now()) {
      this.counts.refusedTokens += 1;
      return Promise.reject(new InvalidTokenError('unknown or expired token'));
    }
    return Promise.resolve({ token: value, clientId: found.clientId, scopes: [], expiresAt: Math.floor(found.expiresAt / 1000) });
  }

  /** Drops every access token (the server stops accepting what the relay holds). */
  revokeAllAccess(): void {
    this.access.clear();
  }
}

/** The running server: its MCP URL, its provider, and how many tool calls reached the MCP server. */
export interface OAuthMcpServer {
  url: string;
  provider: TestOAuthProvider;
  toolCalls: () => number;
  close(): Promise<void>;
}

/** Starts the OAuth-protected MCP server (tool `whoami`) on a free loopback port. */
export async function startOAuthMcpServer(): Promise<OAuthMcpServer> {
  const provider = new TestOAuthProvider();
  const app = express();
  let calls = 0;
  const server: Server = await new Promise((ok) => {
    const s = app.listen(0, '127.0.0.1', () => ok(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = new URL(`${base}/mcp`);
  app.use(mcpAuthRouter({
    provider, issuerUrl: new URL(base), resourceServerUrl: mcpUrl,
    authorizationOptions: { rateLimit: false }, tokenOptions: { rateLimit: false }, clientRegistrationOptions: { rateLimit: false },
  }));
  const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  app.post('/mcp', bearer, express.json(), async (req, res) => {
    const mcp = new McpServer({ name: 'oauth-protected', version: '1' });
    mcp.registerTool('whoami', { description: 'Names the OAuth client the call was authorized for' }, () => {
      calls += 1;
      return { content: [{ type: 'text', text: `authorized client ${req.auth?.clientId ?? '?'}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void mcp.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return {
    url: mcpUrl.toString(), provider, toolCalls: () => calls,
    close: () => new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    }),
  };
}
