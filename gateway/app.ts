/**
 * Builds the gateway's Koa application from its dependencies. No globals: `main.ts` and the
 * tests construct the dependencies and pass them in.
 */
import Koa from 'koa';
import { errorMiddleware } from '../lib/http/error-middleware';
import { koaErrorListener } from '../lib/http/koa-errors';
import { beginRequest } from '../lib/http/request-context';
import { mountRoutes, type RouteEntry } from '../lib/http/route-access';
import { openApiRouter } from '../lib/http/openapi-route';
import { adminRouters } from './admin';
import { consoleRouter } from './console/serve';
import { grantDispatchRouter } from './agent-grants/dispatch-router';
import { describeRequest } from '../lib/client-address/request-origin';
import { authRouter } from './identity/auth-router';
import { accountSecurityRouter } from './identity/account-security';
import { healthRouter } from './surfaces/health';
import { deepHealthRouter } from './surfaces/health-deep';
import { alertsAdminRouter } from './ops/alerts/admin-routes';
import { modelsRouter } from './surfaces/models';
import { routingStatusRouter } from './surfaces/routing-status';
import { publicStatsRouter } from './surfaces/public-stats';
import { siteConfigRouter } from './surfaces/site-config';
import { metricsRouter } from './ops/metrics-router';
import type { GatewayDeps } from './deps';
import type { GatewayState } from './surfaces/state';

/** The gateway's Koa app with its route table (every route and what it requires). */
export type GatewayApp = Koa<GatewayState> & { routes: readonly RouteEntry[] };

const GATEWAY_INFO = {
  title: 'Inference gateway',
  version: '1',
  description: 'Inference surfaces, accounts and keys, and the gateway administration (docs/inference-surfaces.md). Generated from the live route table (docs/openapi.md).',
};

/**
 * Creates the gateway app. `servedRoutes` answers the whole listener's route table (the inference
 * routes and forwarded paths served outside this app too) for `/openapi.json`; default: this app's.
 */
export function createGatewayApp(deps: GatewayDeps, servedRoutes?: () => readonly RouteEntry[]): GatewayApp {
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
  const description = openApiRouter<GatewayState>(GATEWAY_INFO, servedRoutes ?? (() => routes));
  const routes = mountRoutes(app, [description, health, deepHealth, routingStatusRouter(deps), siteConfigRouter(deps), publicStatsRouter(deps), metricsRouter(deps), modelsRouter(deps), authRouter(deps), accountSecurityRouter(deps), grantDispatchRouter(deps), ...adminRouters(deps), alertsAdminRouter(deps), consoleRouter({ dir: deps.settings.CONSOLE_DIR, cwd: process.cwd() })]);
  return Object.assign(app, { routes });
}
