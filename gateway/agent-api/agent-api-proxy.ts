/**
 * One origin for people and browsers (docs/one-origin.md): the gateway forwards the control-plane
 * API's owner and operator paths (`/v1/agent`, `/v1/agent/*`, `/admin/agent/*`, and the database
 * tool's `/api/admin/agent/pgadmin` tree) to the API at `GATEWAY_AGENT_API_URL`.
 *
 * Transport only: the proxy decides nothing about access (the API's route checks the caller, as
 * it does on its own port). It forwards the method, the path and query exactly as received (a
 * path in any other than its canonical spelling is refused, never normalized), the headers minus
 * hop-by-hop ones plus `X-Forwarded-*` (forwarded-headers.ts), and streams both bodies with
 * backpressure: nothing is buffered, response headers go out at once, and an SSE stream flows
 * event by event. The client closing its connection aborts the API request. Failures before the
 * API answered are JSON errors naming the agent API (503 unreachable, 504 no answer in time, 502
 * broken answer); after the answer started, the client's connection is cut (an event stream's
 * client then resumes with `Last-Event-ID`).
 *
 * It runs only on a miss of the inference route map (gateway/server.ts): inference requests pay
 * nothing for it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { Pool, errors } from 'undici';
import { AppError } from '../../lib/errors';
import { sendError } from '../../lib/http/error-middleware';
import { beginRequest } from '../../lib/http/request-context';
import { describeRequest } from '../../lib/client-address/request-origin';
import type { ClientAddressResolver } from '../../lib/client-address/client-address';
import type { RouteEntry } from '../../lib/http/route-access';
import type { Logger } from '../../lib/logger';
import { FORWARDABLE_METHODS } from '../../lib/http/methods';
import { forwardedRequestHeaders, forwardedResponseHeaders } from './forwarded-headers';

/** Longest wait for a TCP (or TLS) connection to the API: a stopped API answers in milliseconds, a black-holed one fails here. */
export const AGENT_API_CONNECT_TIMEOUT_MS = 5_000;
/** Longest wait for the API's response headers (prompt rewrite waits for a model; job creation for Temporal). */
export const AGENT_API_HEADERS_TIMEOUT_MS = 300_000;
/** Longest silence inside a response body; above the API's longest SSE keep-alive interval (300 s). */
export const AGENT_API_BODY_IDLE_MS = 600_000;

/** The methods forwarded; anything else (TRACE, CONNECT…) is 405 at the gateway, except on the database tool's tree. */
export const FORWARDED_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const TOOL_PREFIX = '/api/admin/agent/pgadmin';

/** Whether `path` is in the database tool's tree, whose API route forwards every method to the tool (docs/agent-admin.md). */
function isDatabaseToolPath(path: string): boolean {
  return path === TOOL_PREFIX || path.startsWith(`${TOOL_PREFIX}/`);
}

/** The methods forwarded on `path`: on the database tool's tree, every one a request can carry. */
function forwardedMethodsOf(path: string): readonly string[] {
  return isDatabaseToolPath(path) ? FORWARDABLE_METHODS : FORWARDED_METHODS;
}

/** Whether `path` (no query) is one of the control-plane API's owner or operator paths. */
export function isAgentApiPath(path: string): boolean {
  return path.startsWith('/v1/agent') ? path.length === 9 || path.charCodeAt(9) === 47 /* '/' */
    : path.startsWith('/admin/agent/') || isDatabaseToolPath(path);
}

/**
 * Why `path` is not forwarded as spelled, or undefined when it is canonical: no empty, `.` or `..`
 * segment, no backslash, no percent-encoded dot, slash or backslash. Such a spelling could name
 * another route once some later hop normalizes it; the API's routers are strict and would 404 it
 * anyway, so refusing costs no legitimate request.
 */
export function nonCanonicalPath(path: string): string | undefined {
  if (path.includes('\\')) return 'a backslash';
  if (/%(2e|2f|5c)/i.test(path)) return 'a percent-encoded dot, slash or backslash';
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment === '.' || segment === '..') return 'a dot segment';
    if (segment === '' && i < segments.length - 1) return 'an empty segment (doubled slash)';
  }
  return undefined;
}

/** The gateway's route-table entries for the forwarded paths (access `forwarded`: the API's routes decide). */
export function forwardedRoutes(): RouteEntry[] {
  return ['/v1/agent', '/v1/agent/{*rest}', '/admin/agent/{*rest}', TOOL_PREFIX, `${TOOL_PREFIX}/{*rest}`]
    .map((path) => ({ methods: [...forwardedMethodsOf(path)], path, access: 'forwarded' }));
}

/** What the proxy needs of the gateway. */
export interface AgentApiProxyDeps {
  log: Logger;
  clientAddress: ClientAddressResolver;
}

/**
 * The 404 of an agent API path on a gateway that does not forward them (no
 * `GATEWAY_AGENT_API_URL`): where the API is, and how to serve it here. `knownApiUrl` is the
 * API's URL when this process knows it (an `AGENT_API_URL` other than the default).
 */
export function agentApiNotServed(method: string, path: string, knownApiUrl: string | undefined): AppError {
  const where = knownApiUrl === undefined ? 'the control-plane API (API_PORT, default 8081)' : `the control-plane API at ${new URL(knownApiUrl).origin}`;
  return new AppError('not_found', `No route for ${method} ${path.slice(0, 200)} on the gateway: the agent API's routes are served by ${where}. To serve them on this address too, set GATEWAY_AGENT_API_URL to the API's URL (docs/one-origin.md)`);
}

/** The forwarding half of one origin: one undici pool to the API. */
export class AgentApiProxy {
  private readonly pool: Pool;
  private readonly basePath: string;
  /** The API's origin as named in error messages (no credentials, no path). */
  readonly origin: string;

  constructor(apiUrl: string, private readonly deps: AgentApiProxyDeps) {
    const url = new URL(apiUrl);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connect: { timeout: AGENT_API_CONNECT_TIMEOUT_MS },
      headersTimeout: AGENT_API_HEADERS_TIMEOUT_MS,
      bodyTimeout: AGENT_API_BODY_IDLE_MS,
    });
  }

  /** Forwards one request (its path already matched {@link isAgentApiPath}) and streams the answer. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): void {
    const origin = describeRequest(this.deps.clientAddress, this.deps.log, req);
    const state = beginRequest(req, res, this.deps.log, path, origin.fields);
    const method = req.method ?? 'GET';
    const methods = forwardedMethodsOf(path);
    if (!methods.includes(method)) {
      sendError(new AppError('invalid_request', `Method ${method} is not allowed on ${path}`, { status: 405, headers: { Allow: methods.join(', ') } }), res, state.log);
      return;
    }
    const refused = nonCanonicalPath(path);
    if (refused !== undefined) {
      sendError(new AppError('not_found', `No route for ${method} ${path.slice(0, 200)}: the gateway forwards the agent API's paths only as spelled canonically (this one has ${refused})`), res, state.log);
      return;
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // A body is whatever the request framed as one (any method): never announce one and send none.
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    this.pool.request({
      method,
      path: this.basePath + (req.url ?? path),
      headers: forwardedRequestHeaders({ headers: req.headers, client: origin.client, requestId: state.requestId, encrypted: 'encrypted' in req.socket }),
      body: hasBody ? req : null,
      signal: abort.signal,
    }).then((answer) => {
      const headers = forwardedResponseHeaders(answer.headers);
      // The API answered before the whole request body arrived (a 413): the rest of that body is
      // never read, so this connection cannot carry another request; the client is told to close it.
      if (!req.complete) headers.connection = 'close';
      res.writeHead(answer.statusCode, headers);
      // Headers go out now, not with the first body chunk: an event stream's client sees it open.
      res.flushHeaders();
      pipeline(answer.body, res, (err) => {
        if (err && !abort.signal.aborted) state.log.warn({ event: 'agent_api_proxy_stream_failed', err: err.message }, 'the agent API answer broke off; the client connection is closed');
      });
    }, (err: unknown) => {
      if (abort.signal.aborted) return;
      if (!req.complete) res.setHeader('connection', 'close');
      sendError(this.failure(err), res, state.log);
    });
  }

  /** The client-facing error of a request the API never answered. */
  private failure(err: unknown): AppError {
    const where = `the agent API at ${this.origin} (GATEWAY_AGENT_API_URL)`;
    const code = (err as { code?: string }).code;
    if (err instanceof errors.ConnectTimeoutError) {
      return new AppError('service_unavailable', `${where} did not accept a connection within ${AGENT_API_CONNECT_TIMEOUT_MS / 1000} s`);
    }
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
      return new AppError('service_unavailable', `${where} is not reachable (${code}): is the control-plane API running?`);
    }
    if (err instanceof errors.HeadersTimeoutError) {
      return new AppError('gateway_timeout', `${where} did not answer within ${AGENT_API_HEADERS_TIMEOUT_MS / 1000} s`);
    }
    if (err instanceof errors.RequestContentLengthMismatchError) {
      return new AppError('invalid_request', 'The request body does not match its Content-Length');
    }
    return new AppError('upstream_error', `${where} closed the connection without a complete answer${code ? ` (${code})` : ''}`);
  }

  /** Closes the pool (open streams are cut). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
