/**
 * Builds the control-plane API's Koa application from its dependencies.
 */
import Koa from 'koa';
import type { Client } from '@temporalio/client';
import type { Db } from '../lib/db';
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import { errorMiddleware } from '../lib/http/error-middleware';
import { koaErrorListener } from '../lib/http/koa-errors';
import { beginRequest, type RequestState } from '../lib/http/request-context';
import { clientAddressResolverFrom, describeRequest } from '../lib/client-address/request-origin';
import type { ClientIpInfo } from '../lib/client-address/client-address';
import { mountRoutes, type RouteEntry } from '../lib/http/route-access';
import { openApiRouter } from '../lib/http/openapi-route';
import type { AccessTokens } from '../lib/identity/access-tokens';
import type { GatewayGrantClient } from '../agent/grants/gateway-grant-client';
import type { ObjectStore } from '../lib/object-store';
import { apiRouters } from './routes';
import type { EventNotifier } from '../agent/events/event-notifier';
import type { AgentSettings } from '../agent/settings/settings-sync';
import type { RepoCredentials } from '../agent/source/repo-credentials';
import type { McpSessionPool } from '../agent/tools/mcp-sessions';
import type { SourceControlApp } from '../agent/jobs/source-control-app';
import type { ApiMetrics } from './metrics/api-metrics';
import { apiMetricsOf } from './process-services';

export interface ApiDeps {
  log: Logger;
  db: Db;
  /** The environment, with the variables an admin setting replaces reading the synced values (`liveSettings`). */
  settings: Settings;
  /** The admin settings, synced from the database (agent/settings/settings-sync.ts). */
  agentSettings: AgentSettings;
  /** Verifies owners' and operators' access tokens (same `AUTH_JWT_SECRET` as the gateway). */
  tokens: AccessTokens;
  /** Temporal client (workflow starts, updates, signals). */
  temporal: Client;
  temporalReachable: (timeoutMs: number) => Promise<boolean>;
  /** The gateway's grant dispatch (inference grants, prompt rewrite); absent when not configured. */
  grants?: GatewayGrantClient;
  /** Wakes job event streams (one LISTEN connection per process); created on first use when absent. */
  events?: EventNotifier;
  /** Where host runners leave workspace archives for download (absent: downloads answer 503). */
  objectStore?: ObjectStore;
  /** Mints repository credentials through the configured forges (absent: no forge; clones go without a credential). */
  repoCredentials?: RepoCredentials;
  /** The tool relay's sessions with MCP servers (docs/mcp.md); created on first use when absent. */
  mcpSessions?: McpSessionPool;
  /** The deployment's source-control app, loaded once per process; created on first use when absent. */
  sourceControlApp?: SourceControlApp;
  /** The process's Prometheus metrics (docs/metrics-api.md); created when absent, refreshed once started. */
  metrics?: ApiMetrics;
}


const API_INFO = {
  title: 'Agent control-plane API',
  version: '1',
  description: 'Jobs, turns, hosts, sandboxes, tools and their administration (docs/agent-api.md). Generated from the live route table (docs/openapi.md).',
};

/** The control-plane API's Koa app with its route table (every route and what it requires). */
export type ApiApp = Koa<RequestState> & { routes: readonly RouteEntry[] };

/**
 * The control-plane API's Koa app. Each request's client address is resolved as the gateway does
 * (docs/client-address.md: forwarding headers only from `TRUSTED_PROXIES` with
 * `TRUST_PROXY_HEADERS=1`, e.g. the gateway serving this API on its own origin, docs/one-origin.md);
 * an invalid trust configuration throws here, at startup.
 */
export function createApiApp(deps: ApiDeps): ApiApp {
  const clientAddress = clientAddressResolverFrom(deps.settings);
  const app = new Koa<RequestState>({ proxy: false });
  app.silent = true;
  app.on('error', koaErrorListener(deps.log));
  app.use(async (ctx, next) => {
    const origin = describeRequest(clientAddress, deps.log, ctx.req);
    const state: RequestState & { client?: ClientIpInfo } = beginRequest(ctx.req, ctx.res, deps.log, ctx.path, origin.fields);
    state.client = origin.client;
    ctx.state = state;
    await next();
  });
  // Outside the error middleware: it sees the status an error was rendered with.
  app.use(apiMetricsOf(deps).requestMiddleware());
  app.use(errorMiddleware());
  // Each route declares its access (lib/http/route-access.ts); a route without one stops startup here.
  const description = openApiRouter<RequestState>(API_INFO, () => routes);
  const routes = mountRoutes(app, [...apiRouters(deps), description]);
  return Object.assign(app, { routes });
}
