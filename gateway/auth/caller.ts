/**
 * Who is calling an inference surface. Until the identity issue adds API keys, two modes exist:
 * `USER_AUTH_ENABLED=false` (every caller is admin, spec 5.1) and enabled (no key is valid yet,
 * so calls that need a key get 401). Model visibility by role lives here too.
 */
import { AppError } from '../../lib/errors';
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

export interface Authenticator {
  /** The caller for an `Authorization` header, or undefined when missing or invalid. */
  authenticate(authorization: string | undefined): Caller | undefined;
}

const ADMIN_WITHOUT_AUTH: Caller = Object.freeze({ role: 'admin', via: 'auth_disabled' });

export function createAuthenticator(options: { userAuthEnabled: boolean }): Authenticator {
  if (!options.userAuthEnabled) return { authenticate: () => ADMIN_WITHOUT_AUTH };
  return { authenticate: () => undefined };
}

/** The caller of a request that needs a key (401 otherwise). */
export function requireCaller(authenticator: Authenticator, authorization: string | undefined): Caller {
  const caller = authenticator.authenticate(authorization);
  if (!caller) throw new AppError('unauthorized', 'Missing or invalid API key (Authorization: Bearer <key>)');
  return caller;
}

/** The caller authenticated for this request (set before any inference handler runs). */
export function callerOf(state: { caller?: Caller | undefined }): Caller {
  if (!state.caller) throw new AppError('internal', 'inference handler reached without an authenticated caller');
  return state.caller;
}

const RANK: Readonly<Record<Role, number>> = { free: 0, pro: 1, internal: 2, admin: 3 };

/** Whether a caller's role may see and call a model (`required_role`, spec 5.1). */
export function canSee(role: Role | undefined, model: Model): boolean {
  if (!model.requiredRole) return true;
  return role !== undefined && RANK[role] >= RANK[model.requiredRole];
}
