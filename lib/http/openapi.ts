/**
 * The OpenAPI 3.1 description of a service, built from its live route table (docs/openapi.md):
 * one operation per route and method, nothing else, so the document cannot list a route that is
 * not served nor miss one that is. Each operation records its access kind as `x-access` and the
 * matching security requirement; bodies and query parameters come from the route's zod schemas
 * (lib/http/route-docs.ts), error answers from the one error envelope (lib/http/error-middleware.ts).
 */
import type { Access, RouteEntry } from './route-access';
import type { RouteDoc } from './route-docs';
import { componentName, queryParameters, SchemaComponents, type JsonSchema } from './openapi-schemas';
import { OPENAPI_METHODS } from './methods';

export interface ApiInfo {
  title: string;
  version: string;
  description: string;
}

/** The security schemes; which ones an access kind accepts is {@link SECURITY_OF}. */
const SECURITY_SCHEMES: Record<string, Record<string, unknown>> = {
  apiKey: { type: 'http', scheme: 'bearer', description: 'A gateway API key (or an inference grant) as `Authorization: Bearer <key>`.' },
  xApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'A gateway API key in `X-Api-Key` (messages surface, when there is no `Authorization` header).' },
  accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "An account's access token (from `/auth/login`); the route says which right it must carry." },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The deployment\'s `ADMIN_TOKEN`.' },
  hostCredential: { type: 'http', scheme: 'bearer', description: 'The credential of the enrolled host named in the path.' },
  internalToken: { type: 'http', scheme: 'bearer', description: 'The service-to-service `GATEWAY_GRANT_DISPATCH_TOKEN`.' },
  relayCredential: { type: 'http', scheme: 'bearer', description: "A tool-relay credential (`mcp_…` or `amr.…`) of a chat's running attempt (docs/mcp.md)." },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'The `METRICS_TOKEN` of the service (Prometheus scrapes).' },
};

/** Each access kind's security requirement (alternatives) and what passes, in words (docs/security.md). */
const SECURITY_OF: Record<Access, { schemes: string[]; who: string }> = {
  public: { schemes: [], who: 'anyone' },
  key: { schemes: ['apiKey'], who: 'a gateway API key or an inference grant (anyone when `USER_AUTH_ENABLED=false`)' },
  account: { schemes: ['accessToken'], who: "an account's access token" },
  credentials: { schemes: ['accessToken'], who: "the account's own access token (an impersonation token is refused)" },
  admin: { schemes: ['adminToken', 'accessToken'], who: '`ADMIN_TOKEN`, or the access token of an account whose role is `admin`' },
  owner: { schemes: ['apiKey', 'accessToken'], who: 'an API key or access token of an account holding `agent.use`' },
  operator: { schemes: ['adminToken', 'accessToken'], who: '`ADMIN_TOKEN`, or the access token of an account with `agent.admin` or the admin role' },
  host: { schemes: ['hostCredential'], who: 'the credential of the enrolled host named by `hostId`' },
  internal: { schemes: ['internalToken'], who: '`GATEWAY_GRANT_DISPATCH_TOKEN`' },
  relay: { schemes: ['relayCredential'], who: "a tool-relay credential resolving to its chat's running attempt" },
  metrics: { schemes: ['metricsToken', 'adminToken', 'accessToken'], who: "`METRICS_TOKEN`, or the service's administrator credential" },
  forwarded: { schemes: [], who: "whoever the control-plane API's own route admits: the gateway forwards the request (see the API's `/openapi.json`)" },
};

const ERROR_ENVELOPE: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'code', 'param'],
      properties: {
        message: { type: 'string' },
        type: { type: 'string', description: 'OpenAI-style error type (`invalid_request_error`, `authentication_error`, …).' },
        code: { type: 'string', description: 'The error code (lib/errors.ts).' },
        param: { type: ['string', 'null'], description: 'The field or parameter at fault.' },
      },
    },
  },
};

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid request: the message names the field or parameter.', 401: 'No valid credential.', 403: 'The credential lacks the right.',
  404: 'Not found.', 405: 'Method not allowed.', 409: 'Conflict with the current state.', 412: 'Precondition failed.',
  413: 'Body too large.', 429: 'Rate limited.', 500: 'Server error.', 501: 'Not implemented.', 502: 'Upstream error.',
  503: 'Unavailable.', 504: 'Upstream timeout.',
};

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** `/jobs/:jobId` → `/jobs/{jobId}`, `/x/{*rest}` → `/x/{rest}`, with the parameters' names in order. */
export function openApiPath(koaPath: string): { path: string; params: Array<{ name: string; rest: boolean }> } {
  const params: Array<{ name: string; rest: boolean }> = [];
  const path = koaPath
    .replace(/\{\*(\w+)\}/g, (_m, name: string) => (params.push({ name, rest: true }), `{${name}}`))
    .replace(/:(\w+)/g, (_m, name: string) => (params.push({ name, rest: false }), `{${name}}`));
  return { path, params };
}

function operationId(method: string, path: string, taken: Set<string>): string {
  const base = componentName(`${method.toLowerCase()}${path}`);
  let id = base;
  for (let n = 2; taken.has(id); n += 1) id = `${base}_${n}`;
  taken.add(id);
  return id;
}

function errorResponse(status: number): Record<string, unknown> {
  return { description: ERROR_TEXT[status] ?? 'Error.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

/** The statuses a route answers besides success, from its access, path, body and declaration. */
function errorStatuses(route: RouteEntry, method: string, hasParams: boolean, doc: RouteDoc | undefined): number[] {
  const statuses = new Set<number>([400]);
  if (route.access !== 'public') statuses.add(401).add(403);
  // The gateway's admin API without a database answers 500 `Database not configured`.
  if (route.access === 'admin') statuses.add(500);
  if (hasParams) statuses.add(404);
  if (doc?.body || doc?.bodyText || (BODY_METHODS.has(method) && !doc?.noBody)) statuses.add(413);
  for (const status of doc?.statuses ?? []) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}

function requestBody(method: string, doc: RouteDoc | undefined, components: SchemaComponents, name: string): Record<string, unknown> | undefined {
  if (doc?.body) return { required: true, content: { 'application/json': { schema: components.input(doc.body, `${name}_body`) } } };
  if (doc?.bodyText) return { description: doc.bodyText, content: { 'application/json': { schema: {} } } };
  if (!BODY_METHODS.has(method) || doc?.noBody) return undefined;
  return { description: 'No schema declared for this body: any JSON value, validated by the route (docs/openapi.md).', content: { 'application/json': { schema: {} } } };
}

function successResponse(doc: RouteDoc | undefined, components: SchemaComponents, name: string): [string, Record<string, unknown>] {
  const status = doc?.success ?? 200;
  if (status === 204) return ['204', { description: 'Done; no body.' }];
  const schema = doc?.response ? components.output(doc.response, `${name}_response`) : {};
  return [String(status), { description: 'Success.', content: { [doc?.produces ?? 'application/json']: { schema } } }];
}

function operation(route: RouteEntry, method: string, components: SchemaComponents, ids: Set<string>): Record<string, unknown> {
  const { path, params } = openApiPath(route.path);
  const doc = route.docs?.[method];
  const id = operationId(method, path, ids);
  const security = SECURITY_OF[route.access];
  const schemes = route.access === 'key' && doc?.xApiKey ? [...security.schemes, 'xApiKey'] : security.schemes;
  const parameters = [
    ...params.map((p) => ({ name: p.name, in: 'path', required: true, schema: { type: 'string' }, ...(p.rest ? { description: 'The rest of the path (may hold `/`).' } : {}) })),
    ...(doc?.query ? queryParameters(doc.query, components, id) : []),
  ];
  const body = requestBody(method, doc, components, id);
  const responses: Record<string, unknown> = route.access === 'forwarded'
    ? { default: { description: "The control-plane API's answer, unchanged." } }
    : Object.fromEntries([successResponse(doc, components, id), ...errorStatuses(route, method, params.length > 0, doc).map((s): [string, unknown] => [String(s), errorResponse(s)])]);
  return {
    operationId: id,
    summary: doc?.summary ?? `${method} ${path}`,
    description: `Access \`${route.access}\`: ${security.who}.`,
    'x-access': route.access,
    security: schemes.map((scheme) => ({ [scheme]: [] })),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of `routes` (a service's live route table). */
export function openApiDocument(info: ApiInfo, routes: readonly RouteEntry[]): Record<string, unknown> {
  const components = new SchemaComponents();
  const ids = new Set<string>();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const item = (paths[openApiPath(route.path).path] ??= {});
    for (const method of route.methods) {
      // A method OpenAPI has no field for (PROPFIND, …) is described all the same, under the path
      // item's extension `x-other-methods`, so the document still lists every method served.
      const standard = OPENAPI_METHODS.has(method);
      const holder = standard ? item : ((item['x-other-methods'] ??= {}) as Record<string, unknown>);
      const key = standard ? method.toLowerCase() : method;
      if (holder[key] !== undefined) throw new Error(`two routes serve ${method} ${route.path}`);
      holder[key] = operation(route, method, components, ids);
    }
  }
  return {
    openapi: '3.1.0',
    info,
    paths,
    components: { securitySchemes: SECURITY_SCHEMES, schemas: { Error: ERROR_ENVELOPE, ...components.schemas } },
  };
}
