/**
 * Builds the gateway's Koa application from its dependencies. No globals: `main.ts` and the
 * tests construct the dependencies and pass them in.
 */
import Koa from 'koa';
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import { errorMiddleware } from '../lib/http/error-middleware';
import { koaErrorListener } from '../lib/http/koa-errors';
import { beginRequest } from '../lib/http/request-context';
import { mountRoutes, type RouteEntry } from '../lib/http/route-access';
import type { AccessTokens } from '../lib/identity/access-tokens';
import { adminRouters } from './admin';
import { consoleRouter } from './console/serve';
import { grantDispatchRouter } from './agent-grants/dispatch-router';
import { describeRequest } from '../lib/client-address/request-origin';
import { authRouter } from './identity/auth-router';
import type { ApiKeyCache } from './identity/api-keys';
import { healthRouter } from './surfaces/health';
import { deepHealthRouter } from './surfaces/health-deep';
import type { DistributionState } from './registry/manifest';
import type { RequestLog } from './request-log';
import type { RoutingFile } from './routing-file';
import type { Alerts } from './ops/alerts';
import { alertsAdminRouter } from './ops/alerts/admin-routes';
import type { RuntimeConfig } from './runtime-config/runtime-state';
import type { DatabaseState } from './store/database-state';
import type { SiteSettings } from './store/site-settings';
import { modelsRouter } from './surfaces/models';
import { routingStatusRouter } from './surfaces/routing-status';
import { siteConfigRouter } from './surfaces/site-config';
import type { GatewayContextDeps, GatewayState } from './surfaces/state';

export interface GatewayDeps extends GatewayContextDeps {
  log: Logger;
  database: DatabaseState;
  settings: Settings;
  /** The distribution manifest's state (sign-up and `/site-config` depend on it). */
  distribution: DistributionState;
  /** Runtime settings (`site_settings`), cached in memory. */
  siteSettings: SiteSettings;
  /** API keys (absent without a database). */
  keys: ApiKeyCache | undefined;
  /** Access-token issuing and checking. */
  tokens: AccessTokens;
  /** Runtime configuration: the overlay of stored admin changes over the files. */
  runtimeConfig: RuntimeConfig;
  /** The request log (`api_logs`); absent without a database. */
  requestLog?: RequestLog | undefined;
  /** The routing file (spec 2.6): status, split adjustments, local endpoint health. */
  routingFile: RoutingFile;
  /** Chat-webhook alerts: the alerts file, snooze and mutes, and the engine when enabled (docs/alerts.md). */
  alerts: Alerts;
  cacheRefreshSeconds?: number;
}

/** The gateway's Koa app with its route table (every route and what it requires). */
export type GatewayApp = Koa<GatewayState> & { routes: readonly RouteEntry[] };

/** Creates the gateway app. */
export function createGatewayApp(deps: GatewayDeps): GatewayApp {
  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;
  app.on('error', koaErrorListener(deps.log));
  app.use(async (ctx, next) => {
    const origin = describeRequest(deps.clientAddress, deps.log, ctx.req);
    const state: GatewayState = beginRequest(ctx.req, ctx.res, deps.log, ctx.path, origin.fields);
    state.client = origin.client;
    ctx.state = state;
    await next();
  });
  app.use(errorMiddleware());
  const health = healthRouter({
    database: deps.database,
    routesConfigured: () => deps.registry.current.routesConfigured,
    cacheRefreshSeconds: deps.cacheRefreshSeconds ?? 5,
  });
  const deepHealth = deepHealthRouter({
    base: () => deps.runtimeConfig.base,
    current: () => deps.registry.current,
    routeInfo: () => deps.runtimeConfig.effective.routes,
    breakers: deps.routing.breakers,
    concurrency: deps.concurrency,
  });
  // Each route declares its access (lib/http/route-access.ts); a route without one stops startup here.
  const routes = mountRoutes(app, [health, deepHealth, routingStatusRouter(deps), siteConfigRouter(deps), modelsRouter(deps), authRouter(deps), grantDispatchRouter(deps), ...adminRouters(deps), alertsAdminRouter(deps), consoleRouter({ dir: deps.settings.CONSOLE_DIR, cwd: process.cwd() })]);
  return Object.assign(app, { routes });
}
