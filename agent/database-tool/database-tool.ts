/**
 * The private database admin tool behind the same-origin proxy `/api/admin/agent/pgadmin/` (spec
 * 4.4, 5.7, 7, 8; docs/agent-admin.md "Database tool"): which saved URL may be proxied to, and the
 * proxy session an operator opens.
 *
 * **Allowed URLs.** The tool is private: the saved `database_tool_url` is proxied to only when its
 * host is a loopback or private-network address literal (127.0.0.0/8, ::1, 10.0.0.0/8,
 * 172.16.0.0/12, 192.168.0.0/16, fc00::/7) or a host name listed in `AGENT_DATABASE_TOOL_HOSTS`.
 * A name not listed is refused even if it resolves privately today (DNS can change).
 *
 * **Sessions.** A browser cannot add `Authorization` to the tool's own requests, so opening the tool
 * sets a cookie scoped to the proxy path: `<payload>.<HMAC-SHA-256>` under
 * `AGENT_CONTROL_TOKEN_SECRET`, naming the operator (a user id, or `ADMIN_TOKEN` by a fingerprint
 * of its current value) and an expiry. The cookie only says who opened the session: every proxied
 * request checks that operator's current `agent.admin` again (api/routes/admin-database-tool.ts).
 */
import { BlockList, isIP } from 'node:net';
import { createHmac, hash } from 'node:crypto';
import { tokenEquals } from '../../lib/identity/constant-time';

export const TOOL_PROXY_PREFIX = '/api/admin/agent/pgadmin';
export const TOOL_SESSION_COOKIE = 'agent_dbtool';
/** How long an opened session lasts, seconds. */
export const TOOL_SESSION_SECONDS = 15 * 60;

const PRIVATE = new BlockList();
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4');
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4');
PRIVATE.addAddress('::1', 'ipv6');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

/** Host names listed in `AGENT_DATABASE_TOOL_HOSTS` (comma-separated, case-insensitive). */
export function listedToolHosts(value: string): Set<string> {
  return new Set(value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
}

/** Why `url` may not be proxied to, or undefined when it may. */
export function toolUrlProblem(url: string | null, listed: ReadonlySet<string>): string | undefined {
  if (url === null) return 'no database tool URL is saved (POST /admin/agent/database/pgadmin/setup)';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the saved database tool URL does not parse';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'the saved database tool URL is not http(s)';
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const family = isIP(host);
  if (family !== 0) {
    return PRIVATE.check(host, family === 6 ? 'ipv6' : 'ipv4') ? undefined : `the saved database tool URL's address ${host} is not a loopback or private-network address`;
  }
  return listed.has(host) ? undefined : `the saved database tool URL's host ${host} is not listed in AGENT_DATABASE_TOOL_HOSTS`;
}

/** Who opened a proxy session. */
export type ToolSessionActor = { type: 'user'; userId: number } | { type: 'admin_token' };

interface SessionPayload {
  /** `u:<user id>` or `t:<fingerprint of ADMIN_TOKEN>`. */
  a: string;
  /** Expiry, epoch seconds. */
  e: number;
}

function fingerprint(adminToken: string): string {
  return hash('sha256', `agent-dbtool:${adminToken}`, 'hex').slice(0, 32);
}

function sign(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

export function issueToolSession(secret: string, actor: ToolSessionActor, adminToken: string | undefined, nowMs: number): string {
  const subject = actor.type === 'user' ? `u:${actor.userId}` : `t:${fingerprint(adminToken ?? '')}`;
  const payload = Buffer.from(JSON.stringify({ a: subject, e: Math.floor(nowMs / 1000) + TOOL_SESSION_SECONDS } satisfies SessionPayload)).toString('base64url');
  return `${payload}.${sign(secret, payload)}`;
}

/**
 * The operator a session cookie names, when its signature holds and it has not expired (an
 * `ADMIN_TOKEN` session also ends when the token changes); undefined otherwise.
 */
export function verifyToolSession(secret: string, cookie: string, adminToken: string | undefined, nowMs: number): ToolSessionActor | undefined {
  const dot = cookie.indexOf('.');
  if (dot <= 0 || cookie.length > 512) return undefined;
  const payload = cookie.slice(0, dot);
  if (!tokenEquals(cookie.slice(dot + 1), sign(secret, payload))) return undefined;
  let parsed: SessionPayload;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SessionPayload;
  } catch {
    return undefined;
  }
  if (typeof parsed.e !== 'number' || parsed.e * 1000 <= nowMs || typeof parsed.a !== 'string') return undefined;
  if (parsed.a.startsWith('u:')) {
    const userId = Number(parsed.a.slice(2));
    return Number.isSafeInteger(userId) && userId > 0 ? { type: 'user', userId } : undefined;
  }
  if (parsed.a.startsWith('t:') && adminToken && tokenEquals(parsed.a.slice(2), fingerprint(adminToken))) return { type: 'admin_token' };
  return undefined;
}

/** The value of cookie `name` in a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A `Cookie` header without cookie `name` (the tool never sees the proxy's session), or undefined when nothing is left. */
export function withoutCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const kept = header.split(';').filter((part) => {
    const eq = part.indexOf('=');
    return !(eq > 0 && part.slice(0, eq).trim() === name);
  }).map((p) => p.trim()).filter(Boolean);
  return kept.length > 0 ? kept.join('; ') : undefined;
}
