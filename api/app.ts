/**
 * Builds the control-plane API's Koa application from its dependencies.
 */
import Koa from 'koa';
import { errorMiddleware } from '../lib/http/error-middleware';
import { koaErrorListener } from '../lib/http/koa-errors';
import { beginRequest, type RequestState } from '../lib/http/request-context';
import { clientAddressResolverFrom, describeRequest } from '../lib/client-address/request-origin';
import type { ClientIpInfo } from '../lib/client-address/client-address';
import { mountRoutes, type RouteEntry } from '../lib/http/route-access';
import { openApiRouter } from '../lib/http/openapi-route';
import { apiMetricsOf } from './process-services';
import type { ApiDeps } from './deps';
import { apiRouters } from './routes';

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
