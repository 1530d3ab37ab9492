/**
 * Who is calling an inference surface (spec 5.1). With `USER_AUTH_ENABLED=false` every caller is
 * an administrator. Otherwise `Authorization: Bearer <API key>` is looked up in the in-memory key
 * cache (no database round trip); a missing, unknown, revoked or expired key, or a key of a
 * suspended or deleted account, does not authenticate. Model visibility by role lives here too.
 */
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { credentialState, type ApiKeyCache, type CachedKey, type CredentialState } from '../identity/api-keys';
import type { Model } from '../registry';
import type { Role } from '../registry/types';

export interface Caller {
  role: Role;
  /** How the caller was identified: `auth_disabled` or an API key. */
  via: 'auth_disabled' | 'api_key';
  /** The key's owner (API keys only). */
  userId?: number;
  /** The key's id (API keys only). */
  apiKeyId?: number;
  /** The key's visible prefix (API keys only), safe to log. */
  keyPrefix?: string;
}

/** The outcome of checking an `Authorization` header. */
export type Authentication =
  | { ok: true; caller: Caller }
  | { ok: false; state: Exclude<CredentialState, 'valid'> | 'missing'; key?: CachedKey };

export interface Authenticator {
  /** Checks an `Authorization` header. */
  check(authorization: string | undefined): Authentication;
  /** The caller for an `Authorization` header, or undefined when missing or invalid. */
  authenticate(authorization: string | undefined): Caller | undefined;
}

const ADMIN_WITHOUT_AUTH: Caller = Object.freeze({ role: 'admin', via: 'auth_disabled' });
const AUTH_DISABLED: Authentication = Object.freeze({ ok: true, caller: ADMIN_WITHOUT_AUTH });
const MISSING: Authentication = Object.freeze({ ok: false, state: 'missing' });

export function createAuthenticator(options: { userAuthEnabled: boolean; keys?: ApiKeyCache | undefined }): Authenticator {
  if (!options.userAuthEnabled) return { check: () => AUTH_DISABLED, authenticate: () => ADMIN_WITHOUT_AUTH };
  const keys = options.keys;
  const check = (authorization: string | undefined): Authentication => {
    const secret = bearerToken(authorization);
    if (!secret) return MISSING;
    const key = keys?.lookup(secret);
    const state = credentialState(key);
    if (state !== 'valid' || !key) return { ok: false, state: state === 'valid' ? 'unknown' : state, ...(key ? { key } : {}) };
    return { ok: true, caller: { role: key.role, via: 'api_key', userId: key.userId, apiKeyId: key.id, keyPrefix: key.prefix } };
  };
  return {
    check,
    authenticate: (authorization) => {
      const result = check(authorization);
      return result.ok ? result.caller : undefined;
    },
  };
}

/** The 401 for a request without a valid key. */
export function unauthorized(): AppError {
  return new AppError('unauthorized', 'Missing or invalid API key (Authorization: Bearer <key>)');
}

/** The caller of a request that needs a key (401 otherwise). */
export function requireCaller(authenticator: Authenticator, authorization: string | undefined): Caller {
  const caller = authenticator.authenticate(authorization);
  if (!caller) throw unauthorized();
  return caller;
}

/** The caller authenticated for this request (set before any inference handler runs). */
export function callerOf(state: { caller?: Caller | undefined }): Caller {
  if (!state.caller) throw new AppError('internal', 'inference handler reached without an authenticated caller');
  return state.caller;
}

const RANK: Readonly<Record<Role, number>> = { free: 0, pro: 1, internal: 2, admin: 3 };

/** Whether `role` is at least `minimum`. */
export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}

/** Whether a caller's role may see and call a model (`required_role`, spec 5.1). */
export function canSee(role: Role | undefined, model: Model): boolean {
  if (!model.requiredRole) return true;
  return role !== undefined && RANK[role] >= RANK[model.requiredRole];
}
