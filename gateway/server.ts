/**
 * The gateway's request listener. The inference POST routes (the hot path) are dispatched by
 * one map lookup straight from Node's request listener: no framework context, router or
 * middleware chain per request (Koa plus its router measured ~40 µs a request on this hardware).
 * Everything else (health, model list, later auth and admin) is served by the Koa app.
 * Both paths log `http_request`, echo `X-Request-Id` and render errors the same way.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AppError } from '../lib/errors';
import { sendError, toAppError, type ErrorBodyShape } from '../lib/http/error-middleware';
import { beginRequest, requestIdFrom, trackRequest } from '../lib/http/request-context';
import type { RouteEntry } from '../lib/http/route-access';
import { DEFAULT_AGENT_API_URL } from '../lib/settings';
import { AgentApiProxy, agentApiNotServed, forwardedRoutes, isAgentApiPath } from './agent-api/agent-api-proxy';
import { createGatewayApp } from './app';
import type { GatewayDeps } from './deps';
import type { Caller, CredentialHeader } from './auth/caller';
import { describeRequest } from '../lib/client-address/request-origin';
import { ensureGrantCached, isGrantToken } from './agent-grants/grant-cache';
import { bearerToken } from '../lib/http/json-body';
import { chatHandler } from './surfaces/chat';
import { completionsHandler } from './surfaces/completions';
import { embeddingsHandler } from './surfaces/embeddings';
import { countTokensHandler, messagesHandler, messagesPaths } from './surfaces/messages';
import { upstreamTokenCount } from './surfaces/messages-count-upstream';
import { messagesErrorBody } from './translate/messages-surface/errors';
import { responsesHandler } from './surfaces/responses';
import { inferenceRouteDoc } from './surfaces/inference-docs';
import { RequestRecord } from './surfaces/request-record';
import { HeldEndResponse, holdEnd } from './request-log/held-end';
import type { GatewayContextDeps, InferenceContext, InferenceHandler } from './surfaces/state';

/**
 * An inference route's handler; `errorShape` re-shapes its error bodies (absent: chat-shaped);
 * `xApiKey`: the key may also come as `X-Api-Key` when there is no `Authorization` header (how
 * messages-API clients send it).
 */
export type InferenceRoute = InferenceHandler & { errorShape?: ErrorBodyShape; xApiKey?: boolean };

/**
 * Where an inference request's key is read from: `Authorization`, else (on `xApiKey` routes)
 * `X-Api-Key`; on those routes a request with neither counts as `x-api-key` (what their clients send).
 */
function credentialHeaderOf(req: IncomingMessage, route: InferenceRoute): CredentialHeader {
  return req.headers.authorization !== undefined || !route.xApiKey ? 'authorization' : 'x-api-key';
}

/** The credential as an `Authorization` value: the header itself, or `X-Api-Key` as a bearer token. */
function authorizationOf(req: IncomingMessage, header: CredentialHeader): string | undefined {
  if (header === 'authorization') return req.headers.authorization;
  const key = req.headers['x-api-key'];
  return typeof key === 'string' && key.length > 0 ? `Bearer ${key}` : undefined;
}

/**
 * The inference routes, by path (all POST, all need an API key: `gate.admit` in `runInference`).
 * The messages surface is served under `/v1` and `/<messagesPrefix>/v1` with messages-shaped errors.
 */
export function inferenceRoutes(deps: GatewayContextDeps, options: { messagesPrefix: string }): ReadonlyMap<string, InferenceRoute> {
  const routes = new Map<string, InferenceRoute>([
    ['/v1/chat/completions', chatHandler(deps)],
    ['/v1/completions', completionsHandler(deps)],
    ['/v1/responses', responsesHandler(deps)],
    ['/v1/embeddings', embeddingsHandler(deps)],
  ]);
  const paths = messagesPaths(options.messagesPrefix);
  const messages = Object.assign(messagesHandler(deps), { errorShape: messagesErrorBody, xApiKey: true });
  const countTokens = Object.assign(countTokensHandler(deps, upstreamTokenCount(deps)), { errorShape: messagesErrorBody, xApiKey: true });
  for (const path of paths.messages) routes.set(path, messages);
  for (const path of paths.countTokens) routes.set(path, countTokens);
  return routes;
}

class Context implements InferenceContext {
  constructor(readonly req: IncomingMessage, readonly res: ServerResponse, readonly state: RequestRecord) {}
  header(name: string): string | undefined {
    const value = this.req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value || undefined;
  }
}

async function runInference(handler: InferenceRoute, req: IncomingMessage, res: ServerResponse, path: string, deps: GatewayDeps): Promise<void> {
  const startedAt = performance.now();
  const origin = describeRequest(deps.clientAddress, deps.log, req);
  const record = trackRequest(new RequestRecord(requestIdFrom(req.headers['x-request-id']), deps.log, path, origin.client, startedAt), req, res, deps.log, path, origin.fields);
  // With a request log, the answer's last bytes wait for its row's journal write (held-end.ts).
  if (deps.requestLog) record.heldResponse = holdEnd(res);
  try {
    if (req.method !== 'POST') {
      throw new AppError('invalid_request', `Method ${req.method} is not allowed on ${path}; use POST`, { status: 405, headers: { Allow: 'POST' } });
    }
    const header = credentialHeaderOf(req, handler);
    const authorization = authorizationOf(req, header);
    if (deps.settings.USER_AUTH_ENABLED && deps.grants) {
      // Only inference grants may need a database read on a cache miss; API keys never wait here.
      const token = bearerToken(authorization);
      if (token !== undefined && isGrantToken(token)) await ensureGrantCached(deps.grants, token, () => deps.gate.blocklist.blocked(origin.client));
    }
    record.caller = deps.gate.admit(origin.client, authorization, path, record, header);
    if (req.headers['x-probe'] !== undefined) record.synthetic = honoursProbe(record.caller, req.headers['x-probe']);
    await handler(new Context(req, res, record));
  } catch (thrown) {
    record.errorCode = toAppError(thrown).code;
    sendError(thrown, res, record.log, handler.errorShape);
  } finally {
    // The response has ended (or the client left): seal the record, charge the quota, count it, queue one request-log row.
    record.end(req, res);
    if (record.usage !== undefined) deps.limits.charge(record.caller?.userId, record);
    deps.metrics.requests.observe(record);
    if (deps.requestLog) deps.requestLog.finish(record);
    else record.releaseResponse();
  }
}

/**
 * `X-Probe: synthetic` (docs/identity.md "Synthetic probes") is honoured only from an API key of an
 * internal or admin account: never free/pro keys, never callers without a key (auth off), never
 * agent grants.
 */
export function honoursProbe(caller: Caller, header: string | string[]): boolean {
  return header === 'synthetic' && caller.via === 'api_key' && (caller.role === 'internal' || caller.role === 'admin');
}

/**
 * The gateway's listener with its route table: the inference routes (API key), the Koa app's, and
 * (with `GATEWAY_AGENT_API_URL`) the forwarded agent API paths. `close` closes the agent API pool.
 */
export type GatewayListener = RequestListener & { routes: readonly RouteEntry[]; responseClass: typeof HeldEndResponse; close(): Promise<void> };

/**
 * The request listener to give `http.createServer`. An inference path is one map lookup; only on
 * a miss is the path checked against the agent API's (forwarded, or a 404 saying where the API
 * is: docs/one-origin.md), and everything else goes to the Koa app.
 */
export function createGatewayListener(deps: GatewayDeps): GatewayListener {
  const routes = inferenceRoutes(deps, { messagesPrefix: deps.settings.MESSAGES_PREFIX });
  const app = createGatewayApp(deps, () => table);
  const koa = app.callback();
  const apiUrl = deps.settings.GATEWAY_AGENT_API_URL;
  const agentApi = apiUrl === undefined ? undefined : new AgentApiProxy(apiUrl, { log: deps.log, clientAddress: deps.clientAddress });
  const knownApiUrl = deps.settings.AGENT_API_URL === DEFAULT_AGENT_API_URL ? undefined : deps.settings.AGENT_API_URL;
  const table: RouteEntry[] = [
    ...[...routes].map(([path, route]): RouteEntry => ({ methods: ['POST'], path, access: 'key', docs: { POST: inferenceRouteDoc(path, route) } })), ...app.routes, ...(agentApi ? forwardedRoutes() : []),
  ];
  const listener: RequestListener = (req, res) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const handler = routes.get(path);
    if (handler) void runInference(handler, req, res, path, deps);
    else if (!isAgentApiPath(path)) void koa(req, res);
    else if (agentApi) agentApi.handle(req, res, path);
    else notServed(req, res, path, knownApiUrl, deps);
  };
  return Object.assign(listener, { routes: table, responseClass: HeldEndResponse, close: async () => agentApi?.close() });
}

function notServed(req: IncomingMessage, res: ServerResponse, path: string, knownApiUrl: string | undefined, deps: GatewayDeps): void {
  const state = beginRequest(req, res, deps.log, path, describeRequest(deps.clientAddress, deps.log, req).fields);
  sendError(agentApiNotServed(req.method ?? 'GET', path, knownApiUrl), res, state.log);
}
