/**
 * What a route's API description says beyond its path, method and access (docs/openapi.md):
 * the zod schemas it validates its body and query with, and the statuses it answers. Declared
 * next to the route with {@link documentRoute}, kept beside the router (never on a request's
 * path: nothing here runs per request), and read by {@link routeTable} into the route table,
 * from which lib/http/openapi.ts builds the document.
 */
import type Router from '@koa/router';
import type { z } from 'zod';
import type { Endpoint } from '../contracts/endpoint';

/** One route's description. Every field is optional: a route without one gets a generic entry. */
export interface RouteDoc {
  /** One line saying what the route does. */
  summary?: string;
  /** The zod schema its JSON body is validated with (the same object the handler uses). */
  body?: z.ZodType;
  /** A body that is not JSON or not validated by a zod schema: what it is, in words. */
  bodyText?: string;
  /** Takes no body (an action named by its path): no request body is described. */
  noBody?: boolean;
  /** The zod schema of its success body, where one exists (internal contracts). */
  response?: z.ZodType;
  /** The zod object its query string is validated with (one parameter per key), or a union of objects (alternatives). */
  query?: z.ZodObject | z.ZodUnion<readonly z.ZodObject[]>;
  /** The status of a success (default 200). */
  success?: number;
  /** The media type of a success when not JSON (`text/event-stream`, `application/octet-stream`, …). */
  produces?: string;
  /** Other statuses the route answers that the error rules do not imply (409, 412, 429, 503, …). */
  statuses?: readonly number[];
  /** The API key may also come as `X-Api-Key` (the messages surface). */
  xApiKey?: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routers carry their own state types
type AnyRouter = Router<any>;

const docsByRouter = new WeakMap<AnyRouter, Map<string, RouteDoc>>();

function keyOf(method: string, fullPath: string): string {
  return `${method.toUpperCase()} ${fullPath}`;
}

/**
 * Declares the description of `method path` on `router` (`path` as given to `router.get` & co.,
 * the router's prefix is added). Call it beside the route's registration.
 */
export function documentRoute(router: AnyRouter, method: string, path: string, doc: RouteDoc): void {
  let docs = docsByRouter.get(router);
  if (!docs) docsByRouter.set(router, (docs = new Map<string, RouteDoc>()));
  docs.set(keyOf(method, `${router.opts.prefix ?? ''}${path}`), doc);
}

/** Declares an internal contract's route (lib/contracts/): its request and response schemas, and `extra`. */
export function documentEndpoint(router: AnyRouter, endpoint: Endpoint, extra: RouteDoc = {}): void {
  const body = endpoint.method === 'GET' || extra.noBody ? {} : { body: endpoint.request };
  documentRoute(router, endpoint.method, endpoint.route, { summary: `Internal contract \`${endpoint.name}\` (lib/contracts/).`, ...body, response: endpoint.response, ...extra });
}

/** The descriptions declared for the route `fullPath` (prefix included), by method. */
export function routeDocsOf(router: AnyRouter, methods: readonly string[], fullPath: string): Record<string, RouteDoc> | undefined {
  const docs = docsByRouter.get(router);
  if (!docs) return undefined;
  const found: Record<string, RouteDoc> = {};
  for (const method of methods) {
    const doc = docs.get(keyOf(method, fullPath));
    if (doc) found[method] = doc;
  }
  return Object.keys(found).length === 0 ? undefined : found;
}

/** Every description declared on `router` whose route does not exist (a stale or misspelt declaration). */
export function strayRouteDocs(router: AnyRouter, served: ReadonlySet<string>): string[] {
  return [...(docsByRouter.get(router)?.keys() ?? [])].filter((key) => !served.has(key));
}

/** The key {@link strayRouteDocs} compares with: `METHOD /full/path`. */
export const routeDocKey = keyOf;
