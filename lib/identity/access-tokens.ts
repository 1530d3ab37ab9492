/**
 * Access tokens: short-lived JWTs naming a user and the role they had when issued. The gateway
 * issues them (login, refresh); the gateway's admin API and the control-plane API verify them with
 * the shared `AUTH_JWT_SECRET` and re-check the account in the database. Inference accepts API
 * keys, not access tokens.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger';
import type { Settings } from '../settings';
import { signJwt, verifyJwt } from './jwt';
import { isRole, type Role } from './roles';

export interface AccessTokenGrant {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
}

export interface AccessPrincipal {
  userId: number;
  role: Role;
}

export class AccessTokens {
  constructor(private readonly secret: string, readonly ttlSeconds: number) {}

  issue(user: { id: number | string; role: Role }): AccessTokenGrant {
    const token = signJwt({ sub: String(user.id), role: user.role, typ: 'access' }, this.secret, this.ttlSeconds);
    return { access_token: token, token_type: 'bearer', expires_in: this.ttlSeconds };
  }

  /** The principal of a valid, unexpired access token; undefined for anything else. */
  verify(token: string): AccessPrincipal | undefined {
    const claims = verifyJwt(token, this.secret);
    if (!claims || claims.typ !== 'access' || !/^[1-9]\d{0,17}$/.test(claims.sub)) return undefined;
    const role = claims.role;
    if (!isRole(role)) return undefined;
    return { userId: Number(claims.sub), role };
  }
}

/** The process's token service; without `AUTH_JWT_SECRET` a random key (tokens end with the process). */
export function accessTokensFrom(settings: Pick<Settings, 'AUTH_JWT_SECRET' | 'ACCESS_TOKEN_TTL_SECONDS'>, log: Logger): AccessTokens {
  let secret = settings.AUTH_JWT_SECRET;
  if (!secret) {
    secret = randomBytes(32).toString('base64url');
    log.warn('AUTH_JWT_SECRET is not set: access tokens are signed with a random per-process key and stop working at restart');
  }
  return new AccessTokens(secret, settings.ACCESS_TOKEN_TTL_SECONDS);
}
