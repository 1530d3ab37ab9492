/**
 * Authorization is part of a route's definition (docs/security.md): every route is registered
 * with an {@link AccessGuard} as its first middleware, naming what it requires, and the guard
 * runs on the matched route: never a decision by path prefix. {@link routeTable} refuses, at
 * startup, a route without one and any router-wide middleware (`router.use`), so a route that
 * states nothing cannot be served.
 *
 * Routers are case-sensitive and strict ({@link createRouter}): one canonical spelling of each
 * path serves; `/ADMIN/users`, `/admin/users/`, `//admin/users`, `/admin/%75sers` are 404.
 * After its check, a guard refuses path parameters and query values that break the text rule
 * (lib/text.ts) with 400 naming them, so they never reach PostgreSQL or a log.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import type { Middleware, ParameterizedContext } from 'koa';
import { AppError } from '../errors';
import { describeTextProblem, textProblem } from '../text';
import { routeDocKey, routeDocsOf, strayRouteDocs, type RouteDoc } from './route-docs';

/**
 * What a route requires: `public` nothing; `account` an account's access token (an impersonation
 * token included); `credentials` the account's own access token, never an impersonation token
 * (minting API keys, changing how the account signs in: docs/identity.md); `key` a
 * gateway API key; `admin` an administrator (gateway admin API); `owner` an account with
 * `agent.use`; `operator` `ADMIN_TOKEN` or an account with `agent.admin`; `host` an enrolled
 * host's credential; `internal` a service-to-service token; `relay` a tool-relay credential (an
 * attempt-fenced `mcp_…` token or an `amr.…` residency credential, docs/mcp.md); `forwarded` the
 * gateway decides nothing and forwards the request to the control-plane API, whose own route
 * declares and checks its access (docs/one-origin.md); `metrics` a Prometheus scrape: `METRICS_TOKEN`
 * or an administrator credential of the service (docs/metrics.md).
 */
export type Access = 'public' | 'account' | 'credentials' | 'key' | 'admin' | 'owner' | 'operator' | 'host' | 'internal' | 'relay' | 'forwarded' | 'metrics';

/** The first middleware of every route: checks the caller, then the path and query text. */
export interface AccessGuard<StateT = unknown> extends Middleware<StateT> {
  readonly access: Access;
}

/**
 * A guard requiring `access`, whose `check` throws 401/403 (or 429/503) when the caller may
 * not pass; `check` may set principals on `ctx.state`.
 */
export function accessGuard<StateT>(access: Access, check?: (ctx: ParameterizedContext<StateT>) => Promise<void> | void): AccessGuard<StateT> {
  const guard: Middleware<StateT> = async (ctx, next) => {
    if (check) await check(ctx);
    refuseBadRouteText(ctx);
    await next();
  };
  return Object.assign(guard, { access });
}

/** The guard of a route anyone may call. */
export function publicAccess<StateT>(): AccessGuard<StateT> {
  return accessGuard<StateT>('public');
}

function refuseBadRouteText(ctx: { params?: Record<string, string>; query: Record<string, string | string[] | undefined> }): void {
  for (const [name, value] of Object.entries(ctx.params ?? {})) {
    const problem = typeof value === 'string' ? textProblem(value) : undefined;
    if (problem) throw new AppError('invalid_request', `Invalid path parameter '${name}': ${describeTextProblem(problem)}`, { param: name });
  }
  for (const [name, value] of Object.entries(ctx.query)) {
    const nameProblem = textProblem(name);
    if (nameProblem) throw new AppError('invalid_request', `Invalid query parameter name: ${describeTextProblem(nameProblem)}`);
    for (const item of Array.isArray(value) ? value : [value]) {
      const problem = item === undefined ? undefined : textProblem(item);
      if (problem) throw new AppError('invalid_request', `Invalid query parameter '${name}': ${describeTextProblem(problem)}`, { param: name });
    }
  }
}

/** A router that matches paths case-sensitively and strictly (no optional trailing slash). */
export function createRouter<StateT>(options: { prefix?: string } = {}): Router<StateT> {
  return new Router<StateT>({ ...options, sensitive: true, strict: true });
}

/** One served route: its methods, its path pattern and what it requires. */
export interface RouteEntry {
  methods: string[];
  path: string;
  access: Access;
  /** Its API description by method, where declared (lib/http/route-docs.ts). */
  docs?: Readonly<Record<string, RouteDoc>>;
}

function isGuard(fn: unknown): fn is AccessGuard {
  return typeof fn === 'function' && typeof (fn as { access?: unknown }).access === 'string';
}

/**
 * The routes of `routers` with what each requires. Throws (at startup) when a route's first
 * middleware is not an {@link AccessGuard}, when a router has router-wide middleware, or when a
 * router matches case-insensitively or loosely, or when a route description names no route.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routers carry their own state types
export function routeTable(routers: ReadonlyArray<Router<any>>): RouteEntry[] {
  const entries: RouteEntry[] = [];
  for (const router of routers) {
    if (router.opts.sensitive !== true || router.opts.strict !== true) {
      throw new Error(`router ${router.opts.prefix ?? '(no prefix)'} is not case-sensitive and strict: build it with createRouter`);
    }
    const served = new Set<string>();
    for (const layer of router.stack) {
      const path = String(layer.path);
      if (layer.methods.length === 0) throw new Error(`router-wide middleware on ${path}: declare access on each route instead (lib/http/route-access.ts)`);
      const first = layer.stack[0];
      if (!isGuard(first)) throw new Error(`route ${layer.methods.join(',')} ${path} declares no access: give it an AccessGuard as its first middleware`);
      const methods = layer.methods.filter((m) => m !== 'HEAD');
      for (const method of methods) served.add(routeDocKey(method, path));
      const docs = routeDocsOf(router, methods, path);
      entries.push({ methods, path, access: first.access, ...(docs ? { docs } : {}) });
    }
    const stray = strayRouteDocs(router, served);
    if (stray.length > 0) throw new Error(`route description for ${stray.join(', ')} names no route of its router (lib/http/route-docs.ts)`);
  }
  return entries;
}

/**
 * Mounts `routers` on `app` after checking them with {@link routeTable}, then answers what no
 * route served: a known path with another method gets 405 with `Allow` (OPTIONS gets 204 with
 * `Allow`); anything else falls through to the 404 of the error middleware.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routers carry their own state types
export function mountRoutes(app: Koa<any, any>, routers: ReadonlyArray<Router<any>>): RouteEntry[] {
  const table = routeTable(routers);
  for (const router of routers) app.use(router.routes());
  const layers = routers.flatMap((router) => router.stack);
  const methodNotAllowed: Middleware = async (ctx, next) => {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined) return;
    const allowed = new Set<string>();
    for (const layer of layers) if (layer.match(ctx.path)) for (const method of layer.methods) allowed.add(method);
    if (allowed.size === 0) return;
    allowed.add('OPTIONS');
    const allow = [...allowed].join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allow);
      return;
    }
    throw new AppError('invalid_request', `Method ${ctx.method} is not allowed on ${ctx.path}`, { status: 405, headers: { Allow: allow } });
  };
  app.use(methodNotAllowed);
  return table;
}
