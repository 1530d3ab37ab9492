/**
 * Account endpoints (the contract is in docs/identity.md):
 * sign-up, e-mail verification, login, refresh, logout, and the caller's API keys.
 * Login, refresh and key management need a database (500 `Database not configured` without one).
 * Failed logins count against the auth-failure blocklist like failed keys.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { createRouter, publicAccess } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { issueApiKey, listApiKeys, revokeApiKey } from '../../lib/identity/api-keys';
import { hashPassword, UNMATCHABLE_PASSWORD_HASH, verifyPassword } from '../../lib/identity/passwords';
import type { GatewayDeps } from '../deps';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import { blocklistSource } from '../auth/auth-failure-blocklist';
import type { GatewayState } from '../surfaces/state';
import {
  consumeRefreshSession, consumeVerification, createUser, emailList, findUserByEmail, findUserById, openRefreshSession,
  promoteListedAdmin, queueEmail, queueVerification, recordLoginEvent, revokeRefreshSession, type LoginOutcome, type UserRow,
} from './accounts';
import { accountGuards, accountIdOf } from './account-guard';
import { FixedWindowLimiter } from './rate-limit';
import { signupState } from './signup-policy';
import { siteIdentity } from './site-identity';

export const REFRESH_COOKIE = 'gw_refresh';
const BODY_LIMIT = 64 * 1024;

const email = z.string().trim().max(320).regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'must be an e-mail address');
const credentials = z.object({ email, password: z.string().min(1).max(1024) }).strict();
const signupBody = z.object({ email, password: z.string().min(10, 'must be at least 10 characters').max(1024) }).strict();
const keyBody = z.object({
  name: z.string().trim().min(1).max(100),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
}).strict();

/** Limits (values chosen here; documented in docs/identity.md). */
export const AUTH_RATE_LIMITS = {
  signupPerSource: { limit: 5, windowMs: 3_600_000 },
  loginPerSource: { limit: 30, windowMs: 300_000 },
  loginPerEmail: { limit: 10, windowMs: 300_000 },
} as const;

type Ctx = Context & { state: GatewayState };

function clientOf(ctx: Ctx): ClientIpInfo {
  if (!ctx.state.client) throw new AppError('internal', 'request reached an auth route without a resolved client');
  return ctx.state.client;
}

function db(deps: GatewayDeps) {
  if (!deps.database.db) throw new AppError('database_not_configured', 'Database not configured');
  return deps.database.db;
}

function rateLimited(retryAfter: number): AppError {
  return new AppError('rate_limited', 'Too many attempts; try again later', { headers: { 'Retry-After': String(retryAfter) } });
}

function siteUrl(deps: GatewayDeps): string {
  return siteIdentity(deps.settings, deps.distribution).publicBaseUrl;
}

function setRefreshCookie(ctx: Ctx, deps: GatewayDeps, token: string | null): void {
  const attributes = [`Path=/auth`, 'HttpOnly', 'SameSite=Strict', ...(deps.settings.COOKIE_SECURE ? ['Secure'] : [])];
  const value = token === null ? `${REFRESH_COOKIE}=; Max-Age=0` : `${REFRESH_COOKIE}=${token}; Max-Age=${deps.settings.REFRESH_TOKEN_TTL_DAYS * 86_400}`;
  ctx.set('Set-Cookie', [value, ...attributes].join('; '));
  ctx.set('Cache-Control', 'no-store');
}

function refreshCookie(ctx: Ctx): string | undefined {
  const header = ctx.get('cookie');
  for (const part of header.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === REFRESH_COOKIE) return rest.join('=') || undefined;
  }
  return undefined;
}

export function authRouter(deps: GatewayDeps): Router<GatewayState> {
  const router = createRouter<GatewayState>({ prefix: '/auth' });
  const open = publicAccess<GatewayState>();
  // The caller's account (re-read from the database each time); minting keys needs its own sign-in.
  const { account, credentials: ownSignIn } = accountGuards(deps);
  const adminEmails = emailList(deps.settings.ADMIN_EMAILS);
  const notifyEmails = deps.settings.SIGNUP_NOTIFY_EMAILS ? emailList(deps.settings.SIGNUP_NOTIFY_EMAILS) : adminEmails;
  const signupLimiter = new FixedWindowLimiter(AUTH_RATE_LIMITS.signupPerSource.limit, AUTH_RATE_LIMITS.signupPerSource.windowMs);
  const loginSourceLimiter = new FixedWindowLimiter(AUTH_RATE_LIMITS.loginPerSource.limit, AUTH_RATE_LIMITS.loginPerSource.windowMs);
  const loginEmailLimiter = new FixedWindowLimiter(AUTH_RATE_LIMITS.loginPerEmail.limit, AUTH_RATE_LIMITS.loginPerEmail.windowMs);

  router.post('/signup', open, async (ctx) => {
    const policy = signupState(deps);
    if (!policy.open) throw new AppError('forbidden', `Sign-up is closed: ${policy.reason}`);
    const source = blocklistSource(clientOf(ctx));
    if (!signupLimiter.take(source)) throw rateLimited(signupLimiter.retryAfterSeconds(source));
    const body = validateBody(signupBody, await readJsonBody(ctx.req, BODY_LIMIT));
    const store = db(deps);
    const user = await createUser(store, { email: body.email, passwordHash: await hashPassword(body.password), verified: !policy.requireVerification });
    if (!user) throw new AppError('conflict', 'An account with this e-mail already exists', { param: 'email' });
    const id = Number(user.id);
    if (policy.requireVerification) await queueVerification(store, ctx.state.log, { id, email: user.email }, siteUrl(deps));
    for (const to of notifyEmails) {
      await queueEmail(store, ctx.state.log, { to, kind: 'signup_notice', subject: 'New sign-up', body: `A new account signed up: ${user.email} (id ${id}).` });
    }
    ctx.status = 201;
    ctx.body = { id, email: user.email, role: user.role, email_verification_required: policy.requireVerification };
  });

  router.post('/verify-email', open, async (ctx) => {
    const body = validateBody(z.object({ token: z.string().min(1).max(200) }).strict(), await readJsonBody(ctx.req, BODY_LIMIT));
    if (!(await consumeVerification(db(deps), body.token))) throw new AppError('invalid_request', 'The verification token is unknown, used or expired', { param: 'token' });
    ctx.body = { verified: true };
  });

  router.post('/login', open, async (ctx) => {
    const client = clientOf(ctx);
    const store = db(deps);
    const body = validateBody(credentials, await readJsonBody(ctx.req, BODY_LIMIT));
    const userAgent = ctx.get('user-agent') || undefined;
    const record = (outcome: LoginOutcome, user?: UserRow) =>
      recordLoginEvent(store, { userId: user ? Number(user.id) : undefined, email: body.email, ip: client.resolved ? client.client_ip : client.peer_ip, userAgent, outcome });
    if (deps.gate.blocklist.blocked(client)) {
      await record('ip_blocked');
      deps.gate.refuseBlocked(client, undefined);
    }
    const source = blocklistSource(client);
    const emailKey = body.email.toLowerCase();
    if (!loginSourceLimiter.take(source) || !loginEmailLimiter.take(emailKey)) {
      await record('rate_limited');
      throw rateLimited(Math.max(loginSourceLimiter.retryAfterSeconds(source), loginEmailLimiter.retryAfterSeconds(emailKey)));
    }
    const user = await findUserByEmail(store, body.email);
    const matches = await verifyPassword(body.password, user?.password_hash ?? UNMATCHABLE_PASSWORD_HASH);
    if (!user || !matches || user.deleted_at) {
      const outcome: LoginOutcome = !user ? 'unknown_email' : user.deleted_at ? 'deleted' : 'bad_password';
      await record(outcome, user);
      deps.gate.recordFailure(client, { path: ctx.path, reason: `login_${outcome}`, userId: user ? Number(user.id) : undefined });
      throw new AppError('unauthorized', 'Invalid e-mail or password');
    }
    if (user.suspended_at) {
      await record('suspended', user);
      throw new AppError('forbidden', 'This account is suspended');
    }
    if (!user.email_verified_at && signupState(deps).requireVerification) {
      await record('unverified', user);
      throw new AppError('forbidden', 'Confirm your e-mail address before logging in (see the verification message)');
    }
    const role = await promoteListedAdmin(store, ctx.state.log, user, adminEmails);
    if (role !== user.role) await deps.keys?.reloadUser(Number(user.id));
    await record('success', user);
    const session = await openRefreshSession(store, Number(user.id), deps.settings.REFRESH_TOKEN_TTL_DAYS);
    setRefreshCookie(ctx, deps, session.token);
    ctx.body = deps.tokens.issue({ id: user.id, role }, session.familyId);
  });

  router.post('/refresh', open, async (ctx) => {
    const token = refreshCookie(ctx);
    if (!token) throw new AppError('unauthorized', `No refresh session (cookie ${REFRESH_COOKIE})`);
    const store = db(deps);
    const consumed = await consumeRefreshSession(store, ctx.state.log, token, deps.settings.REFRESH_TOKEN_TTL_DAYS);
    const user = consumed?.user;
    if (!user || !consumed.next) {
      setRefreshCookie(ctx, deps, null);
      throw new AppError('unauthorized', 'The refresh session is invalid or expired; log in again');
    }
    const role = await promoteListedAdmin(store, ctx.state.log, user, adminEmails);
    if (role !== user.role) await deps.keys?.reloadUser(Number(user.id));
    setRefreshCookie(ctx, deps, consumed.next.token);
    ctx.body = deps.tokens.issue({ id: user.id, role }, consumed.next.familyId);
  });

  router.post('/logout', open, async (ctx) => {
    const token = refreshCookie(ctx);
    if (token) await revokeRefreshSession(db(deps), token);
    setRefreshCookie(ctx, deps, null);
    ctx.status = 204;
  });

  // The caller's own account (the consoles read it to know whom they show and what it may do).
  router.get('/me', account, async (ctx) => {
    const user = await findUserById(db(deps), accountIdOf(ctx.state));
    if (!user) throw new AppError('unauthorized', 'The account of this access token is not active');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { id: Number(user.id), email: user.email, role: user.role, permissions: user.permissions };
  });

  router.post('/api-keys', ownSignIn, async (ctx) => {
    const userId = accountIdOf(ctx.state);
    const body = validateBody(keyBody, await readJsonBody(ctx.req, BODY_LIMIT));
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) throw new AppError('invalid_request', "Invalid field 'expires_at': must be in the future", { param: 'expires_at' });
    if (!deps.keys) throw new AppError('database_not_configured', 'Database not configured');
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await issueApiKey(db(deps), deps.keys, userId, body.name, expiresAt);
  });

  documentRoute(router, 'POST', '/signup', { body: signupBody, success: 201, statuses: [403, 409, 429], summary: 'Creates an account (when sign-up is open).' });
  documentRoute(router, 'POST', '/verify-email', { body: z.object({ token: z.string().min(1).max(200) }).strict(), summary: "Confirms an account's e-mail address." });
  documentRoute(router, 'POST', '/login', { body: credentials, statuses: [429], summary: 'Logs in: an access token, and a refresh session cookie.' });
  documentRoute(router, 'POST', '/refresh', { noBody: true, summary: 'A new access token from the refresh session cookie.' });
  documentRoute(router, 'POST', '/logout', { noBody: true, success: 204, summary: 'Ends the refresh session.' });
  documentRoute(router, 'POST', '/api-keys', { body: keyBody, success: 201, summary: 'Creates an API key of the account (shown once).' });

  router.get('/api-keys', account, async (ctx) => {
    const userId = accountIdOf(ctx.state);
    ctx.body = { data: await listApiKeys(db(deps), userId) };
  });

  router.delete('/api-keys/:id', ownSignIn, async (ctx) => {
    const userId = accountIdOf(ctx.state);
    const id = Number(ctx.params.id);
    if (!Number.isSafeInteger(id) || id <= 0 || !deps.keys || !(await revokeApiKey(db(deps), deps.keys, userId, id))) {
      throw new AppError('not_found', `No API key ${ctx.params.id} on this account`);
    }
    ctx.status = 204;
  });

  return router;
}
