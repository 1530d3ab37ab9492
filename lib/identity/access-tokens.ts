/**
 * Access tokens: short-lived JWTs naming a user and the role they had when issued. The gateway
 * issues them (login, refresh); the gateway's admin API and the control-plane API verify them with
 * the shared signing keys (lib/identity/signing-keys.ts: `AUTH_JWT_SECRET`, then rotated keys) and
 * re-check the account in the database. Inference accepts API keys, not access tokens.
 *
 * Two kinds (`kind` below): a user's own (`sid`: the refresh-session family of the sign-in that
 * issued it), and an impersonation token (docs/identity.md "Impersonation": `act.sub` names the
 * administrator acting as the user, `sid` the administrator's sign-in, `imp` the impersonation).
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db';
import type { Logger } from '../logger';
import type { Settings } from '../settings';
import { signJwt, verifyJwt } from './jwt';
import { isRole, type Role } from './roles';
import { SigningKeyRing } from './signing-keys';

export interface AccessTokenGrant {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
}

/** An impersonation token's facts: the administrator acting, their sign-in, the impersonation row. */
export interface ImpersonationClaims {
  id: number;
  adminUserId: number;
  adminSession: string;
}

export interface AccessPrincipal {
  userId: number;
  role: Role;
  /** `user`: the account's own sign-in; `impersonation`: an administrator acting as the account. */
  kind: 'user' | 'impersonation';
  /** The refresh-session family of the sign-in that issued the token (tokens before it had none). */
  sessionId?: string;
  impersonation?: ImpersonationClaims;
}

/** Lifetime of an impersonation token, seconds (docs/identity.md "Impersonation"). */
export const IMPERSONATION_TTL_SECONDS = 900;

const USER_ID = /^[1-9]\d{0,17}$/;
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function impersonationOf(claims: Record<string, unknown>): ImpersonationClaims | undefined | null {
  const { act, imp, sid } = claims;
  if (act === undefined && imp === undefined) return undefined;
  const actor = (act as { sub?: unknown } | null)?.sub;
  if (typeof actor !== 'string' || !USER_ID.test(actor) || typeof imp !== 'number' || !Number.isSafeInteger(imp) || typeof sid !== 'string' || !SESSION_ID.test(sid)) return null;
  return { id: imp, adminUserId: Number(actor), adminSession: sid };
}

export class AccessTokens {
  readonly ring: SigningKeyRing;

  /** `keys`: the key ring, or a bare secret (the bootstrap key alone). */
  constructor(keys: string | SigningKeyRing, readonly ttlSeconds: number) {
    this.ring = typeof keys === 'string' ? new SigningKeyRing(keys) : keys;
  }

  /** The longest lifetime of any token these keys sign (how long a superseded key must keep verifying). */
  get maxLifetimeSeconds(): number {
    return Math.max(this.ttlSeconds, IMPERSONATION_TTL_SECONDS);
  }

  issue(user: { id: number | string; role: Role }, sessionId?: string): AccessTokenGrant {
    const claims = { sub: String(user.id), role: user.role, typ: 'access', ...(sessionId ? { sid: sessionId } : {}) };
    const token = signJwt(claims, this.ring.signingKey(), this.ttlSeconds);
    return { access_token: token, token_type: 'bearer', expires_in: this.ttlSeconds };
  }

  /** An impersonation token: the user's identity and role, the acting administrator in `act`. */
  issueImpersonation(user: { id: number; role: Role }, impersonation: ImpersonationClaims, ttlSeconds: number): string {
    const claims = { sub: String(user.id), role: user.role, typ: 'access', act: { sub: String(impersonation.adminUserId) }, sid: impersonation.adminSession, imp: impersonation.id };
    return signJwt(claims, this.ring.signingKey(), ttlSeconds);
  }

  /** The principal of a valid, unexpired access token; undefined for anything else. */
  verify(token: string): AccessPrincipal | undefined {
    const claims = verifyJwt(token, (kid) => this.ring.verificationSecret(kid));
    if (!claims || claims.typ !== 'access' || !USER_ID.test(claims.sub)) return undefined;
    const role = claims.role;
    if (!isRole(role)) return undefined;
    const impersonation = impersonationOf(claims);
    if (impersonation === null) return undefined;
    const sessionId = typeof claims.sid === 'string' && SESSION_ID.test(claims.sid) ? claims.sid : undefined;
    const principal: AccessPrincipal = { userId: Number(claims.sub), role, kind: impersonation ? 'impersonation' : 'user' };
    if (sessionId) principal.sessionId = sessionId;
    if (impersonation) principal.impersonation = impersonation;
    return principal;
  }
}

/**
 * The process's token service. With `AUTH_JWT_SECRET` and a database, the key ring re-reads the
 * rotated keys (start it with the process); without `AUTH_JWT_SECRET` a random key (tokens end
 * with the process, and nothing rotates).
 */
export function accessTokensFrom(
  settings: Pick<Settings, 'AUTH_JWT_SECRET' | 'ACCESS_TOKEN_TTL_SECONDS'> & Partial<Pick<Settings, 'AUTH_SIGNING_KEY_SYNC_SECONDS'>>,
  log: Logger, db?: Db | null,
): AccessTokens {
  let secret = settings.AUTH_JWT_SECRET;
  if (!secret) {
    secret = randomBytes(32).toString('base64url');
    log.warn('AUTH_JWT_SECRET is not set: access tokens are signed with a random per-process key and stop working at restart');
    return new AccessTokens(secret, settings.ACCESS_TOKEN_TTL_SECONDS);
  }
  const store = db ? { db, log, syncMs: (settings.AUTH_SIGNING_KEY_SYNC_SECONDS ?? 5) * 1000 } : undefined;
  return new AccessTokens(new SigningKeyRing(secret, store), settings.ACCESS_TOKEN_TTL_SECONDS);
}
