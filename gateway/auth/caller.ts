/**
 * Who is calling an inference surface (docs/identity.md "Authentication on the surfaces"). With
 * `USER_AUTH_ENABLED=false` every caller is an administrator. Otherwise
 * `Authorization: Bearer <API key>` is looked up in the in-memory key cache, and `Bearer agr_…`
 * (an inference grant) in the grant cache (no database round trip); a missing, unknown, revoked or
 * expired credential, or one of a suspended or deleted account, does not authenticate. A grant
 * makes the caller its owner, limited to the grant's model. Model visibility by role lives here
 * too.
 */
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { grantState, isGrantToken, type CachedGrant, type GrantCache } from '../agent-grants/grant-cache';
import type { ApiKeyRecord } from '../../lib/identity/api-keys';
import { credentialState, type CredentialState } from '../../lib/identity/credential-state';
import type { ApiKeyCache } from '../identity/api-keys';
import type { Model } from '../registry';
import type { Role } from '../registry/types';

export interface Caller {
  role: Role;
  /**
   * How the caller was identified: `auth_disabled`, an API key, an inference grant, or `admin` (an
   * administrator's admin credential, on the admin playground: docs/inference-surfaces.md "Playground").
   */
  via: 'auth_disabled' | 'api_key' | 'agent_grant' | 'admin';
  /** The key's or grant's owner. */
  userId?: number;
  /** The key's id (API keys only). */
  apiKeyId?: number;
  /** The key's or grant's visible prefix, safe to log. */
  keyPrefix?: string;
  /** The inference grant's id (grants only). */
  grantId?: string;
  /** The only model the grant allows (public id; grants only). */
  grantModel?: string;
}

/** The outcome of checking an `Authorization` header. */
export type Authentication =
  | { ok: true; caller: Caller }
  | { ok: false; state: Exclude<CredentialState, 'valid'> | 'missing'; key?: ApiKeyRecord | CachedGrant };

export interface Authenticator {
  /** Checks an `Authorization` header. */
  check(authorization: string | undefined): Authentication;
  /** The caller for an `Authorization` header, or undefined when missing or invalid. */
  authenticate(authorization: string | undefined): Caller | undefined;
}

const ADMIN_WITHOUT_AUTH: Caller = Object.freeze({ role: 'admin', via: 'auth_disabled' });
const AUTH_DISABLED: Authentication = Object.freeze({ ok: true, caller: ADMIN_WITHOUT_AUTH });
const MISSING: Authentication = Object.freeze({ ok: false, state: 'missing' });

function checkGrant(grants: GrantCache | undefined, token: string): Authentication {
  const grant = grants?.lookup(token);
  const state = grantState(grant);
  if (state !== 'valid' || !grant) return { ok: false, state: state === 'valid' ? 'unknown' : state, ...(grant ? { key: grant } : {}) };
  return {
    ok: true,
    caller: { role: grant.role, via: 'agent_grant', userId: grant.userId, keyPrefix: grant.prefix, grantId: grant.grantId, grantModel: grant.model },
  };
}

export function createAuthenticator(options: { userAuthEnabled: boolean; keys?: ApiKeyCache | undefined; grants?: GrantCache | undefined }): Authenticator {
  if (!options.userAuthEnabled) return { check: () => AUTH_DISABLED, authenticate: () => ADMIN_WITHOUT_AUTH };
  const { keys, grants } = options;
  const check = (authorization: string | undefined): Authentication => {
    const secret = bearerToken(authorization);
    if (!secret) return MISSING;
    if (isGrantToken(secret)) return checkGrant(grants, secret);
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

/**
 * Where an inference request's key came from: `Authorization`, or `X-Api-Key` (messages routes
 * only, when `Authorization` is absent). A 401 names the header that was read, so a client whose
 * `x-api-key` is wrong is not sent looking at `Authorization`.
 */
export type CredentialHeader = 'authorization' | 'x-api-key';

/** The 401 of an inference request, naming the header its key was read from. */
export function unauthorizedVia(header: CredentialHeader, presented: boolean): AppError {
  if (header === 'authorization') return unauthorized();
  return new AppError('unauthorized', presented
    ? 'Invalid API key in the x-api-key header: send a gateway API key as x-api-key: <key> (or Authorization: Bearer <key>)'
    : 'Missing API key: send a gateway API key as x-api-key: <key> or Authorization: Bearer <key>');
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

/**
 * 403 when an inference grant's caller asks for another model than the grant names (checked after
 * alias resolution, so an alias of the granted model is allowed).
 */
export function assertGrantAllows(caller: Caller, modelId: string): void {
  if (caller.grantModel !== undefined && caller.grantModel !== modelId) {
    throw new AppError('forbidden', `This inference grant allows only model '${caller.grantModel}'`, { param: 'model' });
  }
}

/** Whether `role` is at least `minimum`. */
export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}

/** Whether a caller's role may see and call a model (`required_role`: the lowest role that may). */
export function canSee(role: Role | undefined, model: Model): boolean {
  if (!model.requiredRole) return true;
  return role !== undefined && RANK[role] >= RANK[model.requiredRole];
}
