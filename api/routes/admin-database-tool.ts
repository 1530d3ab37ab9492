/**
 * The private database admin tool (a same-origin proxy, operator only, audited;
 * docs/agent-admin.md "Database tool"):
 *
 * - `POST /admin/agent/database/pgadmin/setup` `{url, password}` saves the tool's private URL and
 *   its initial administrator password (a write-only credential, at least 12 characters), audited
 *   `agent.database.pgadmin.setup`;
 * - `POST /admin/agent/database/pgadmin/open` opens a proxy session for this operator (a cookie
 *   scoped to the proxy path), audited `agent.database.pgadmin.open`;
 * - `/api/admin/agent/pgadmin/…` forwards every method (OPTIONS and WebDAV's included: the route
 *   serves them all, so the router never answers one itself), path, query and body to the tool and
 *   streams the answer back. Each request re-checks the operator's current `agent.admin`; 503 when
 *   the saved URL is not allowed (agent/database-tool/database-tool.ts).
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { accessGuard, createRouter, type AccessGuard } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { FORWARDABLE_METHODS } from '../../lib/http/methods';
import { bearerToken, readJsonBody, validateBody } from '../../lib/http/json-body';
import { recordAudit } from '../../agent/audit/audit-log';
import { saveSettings, SETTING_DEFINITIONS } from '../../agent/settings/admin-settings';
import {
  cookieValue, issueToolSession, listedToolHosts, toolUrlProblem, verifyToolSession, withoutCookie,
  TOOL_PROXY_PREFIX, TOOL_SESSION_COOKIE, TOOL_SESSION_SECONDS,
} from '../../agent/database-tool/database-tool';
import { authenticateOperator, currentOperator, requireOperator, type AgentState, type PrincipalDeps } from '../auth/principals';
import { operatorAudit } from '../auth/audit-actor';
import type { ApiDeps } from '../deps';

const BODY_LIMIT = 16 * 1024;
const UPSTREAM_TIMEOUT_MS = 30_000;

const setupSchema = z.object({
  url: SETTING_DEFINITIONS.database_tool_url.schema.unwrap(),
  password: SETTING_DEFINITIONS.database_tool_password.schema,
}).strict();

/** Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy sets itself; never forwarded either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

/**
 * The proxy's guard (access `operator`): `Authorization: Bearer` as on every operator route, or
 * the session cookie `open` set. Either way the operator is checked against the database now.
 */
function requireToolOperator(deps: PrincipalDeps, secret: string | undefined): AccessGuard<AgentState> {
  return accessGuard<AgentState>('operator', async (ctx) => {
    const authorization = ctx.get('authorization') || undefined;
    const session = cookieValue(ctx.get('cookie') || undefined, TOOL_SESSION_COOKIE);
    if (bearerToken(authorization) || !session) {
      ctx.state.operator = await authenticateOperator(deps, authorization);
      return;
    }
    const actor = secret ? verifyToolSession(secret, session, deps.adminToken, Date.now()) : undefined;
    if (!actor) throw new AppError('unauthorized', 'The database tool session is missing, expired or invalid: open it again (POST /admin/agent/database/pgadmin/open)');
    ctx.state.operator = actor.type === 'user' ? await currentOperator(deps, actor.userId) : { via: 'admin_token' };
  });
}

function forwardedRequestHeaders(headers: IncomingHttpHeaders, target: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'authorization' || name === 'cookie' || name.startsWith('x-forwarded-')) continue;
    out[name] = value;
  }
  const cookie = withoutCookie(headers.cookie, TOOL_SESSION_COOKIE);
  if (cookie) out.cookie = cookie;
  out.host = target.host;
  // The tool is served under our path (pgAdmin reads X-Script-Name for its URLs).
  out['x-script-name'] = TOOL_PROXY_PREFIX;
  out['x-forwarded-prefix'] = TOOL_PROXY_PREFIX;
  return out;
}

function proxyTo(ctx: ParameterizedContext<AgentState>, target: URL): Promise<IncomingMessage> {
  const rest = ctx.path.slice(TOOL_PROXY_PREFIX.length) || '/';
  const url = new URL(target.pathname.replace(/\/+$/, '') + rest + ctx.search, target);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const upstream = send(url, { method: ctx.method, headers: forwardedRequestHeaders(ctx.req.headers, target), timeout: UPSTREAM_TIMEOUT_MS }, resolve);
    upstream.on('timeout', () => upstream.destroy(new AppError('gateway_timeout', 'The database tool did not answer in time')));
    upstream.on('error', (err) => reject(err instanceof AppError ? err : new AppError('upstream_error', 'The database tool could not be reached', { cause: err })));
    ctx.req.pipe(upstream);
  });
}

export function adminDatabaseToolRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const principals = { db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN };
  const operator = requireOperator(principals);
  const toolOperator = requireToolOperator(principals, deps.settings.AGENT_CONTROL_TOKEN_SECRET);
  const listed = listedToolHosts(deps.settings.AGENT_DATABASE_TOOL_HOSTS);

  /** The tool's URL when it may be proxied to; else 503 saying why (the saved private URL is not allowed). */
  const allowedTarget = (): URL => {
    const url = deps.agentSettings.current.database_tool_url;
    const problem = toolUrlProblem(url, listed);
    if (problem) throw new AppError('service_unavailable', `The database tool is not available: ${problem}`);
    return new URL(url!);
  };

  router.post('/admin/agent/database/pgadmin/setup', operator, async (ctx) => {
    const body = validateBody(setupSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const problem = toolUrlProblem(body.url, listed);
    if (problem) throw new AppError('invalid_request', `Invalid field 'url': ${problem}`, { param: 'url' });
    await saveSettings(deps.db, { database_tool_url: body.url, database_tool_password: body.password }, {
      env: deps.agentSettings.env, sealer: deps.agentSettings.sealer, by: operatorAudit(ctx),
      audit: { category: 'database', action: 'agent.database.pgadmin.setup' },
    });
    await deps.agentSettings.refresh(true);
    ctx.body = { url: body.url, password_configured: true, open: '/admin/agent/database/pgadmin/open' };
  });

  router.post('/admin/agent/database/pgadmin/open', operator, async (ctx) => {
    const secret = deps.settings.AGENT_CONTROL_TOKEN_SECRET;
    if (!secret) throw new AppError('service_unavailable', 'The database tool proxy needs AGENT_CONTROL_TOKEN_SECRET on the control-plane API');
    const target = allowedTarget();
    const by = operatorAudit(ctx);
    await recordAudit(deps.db, { ...by, category: 'database', action: 'agent.database.pgadmin.open', target: { type: 'database_tool', id: target.origin }, outcome: 'succeeded' });
    const cookie = issueToolSession(secret, by.actor.type === 'user' ? by.actor : { type: 'admin_token' }, deps.settings.ADMIN_TOKEN, Date.now());
    ctx.set('set-cookie', `${TOOL_SESSION_COOKIE}=${cookie}; Path=${TOOL_PROXY_PREFIX}/; Max-Age=${TOOL_SESSION_SECONDS}; HttpOnly; SameSite=Strict${ctx.secure ? '; Secure' : ''}`);
    ctx.body = { url: `${TOOL_PROXY_PREFIX}/`, expires_in: TOOL_SESSION_SECONDS };
  });

  const proxy = async (ctx: ParameterizedContext<AgentState>): Promise<void> => {
    const target = allowedTarget();
    const answer = await proxyTo(ctx, target);
    ctx.status = answer.statusCode ?? 502;
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) ctx.set(name, value);
    }
    ctx.body = answer;
  };
  // One route per path for every method (HEAD comes with GET), its guard first: an OPTIONS or a
  // PROPFIND is the tool's to answer, after the same operator check as a GET.
  const methods = FORWARDABLE_METHODS.filter((method) => method !== 'HEAD');
  for (const path of [TOOL_PROXY_PREFIX, `${TOOL_PROXY_PREFIX}/{*rest}`]) router.register(path, methods, [toolOperator, proxy]);
  documentRoute(router, 'POST', '/admin/agent/database/pgadmin/setup', { body: setupSchema, summary: 'Configures the database tool (pgAdmin).' });
  documentRoute(router, 'POST', '/admin/agent/database/pgadmin/open', { noBody: true, statuses: [503], summary: 'Opens a database tool session (a cookie for its proxy).' });
  for (const path of [TOOL_PROXY_PREFIX, `${TOOL_PROXY_PREFIX}/{*rest}`]) {
    for (const method of methods) {
      const body = method === 'GET' ? {} : { bodyText: 'Whatever the database tool takes: forwarded to it unchanged.' };
      documentRoute(router, method, path, { ...body, statuses: [502, 503], summary: 'The database tool, proxied.' });
    }
  }
  return router;
}
