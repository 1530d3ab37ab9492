/**
 * Every gateway admin route needs an administrator: the static `ADMIN_TOKEN`, or an
 * access token of an account that is an administrator now (re-checked in the database, so a
 * demoted or suspended admin loses access before the token expires). Authentication comes first;
 * then, without a database, every admin endpoint answers 500 `Database not configured`.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, type AccessGuard } from '../../lib/http/route-access';
import { isAdminToken } from '../../lib/identity/admin-token';
import { accountState, credentialState } from '../../lib/identity/credential-state';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import type { AuthGate } from '../auth/gate';
import type { AccessTokens } from '../../lib/identity/access-tokens';
import { readAccount } from '../../lib/identity/accounts';
import type { ApiKeyCache } from '../identity/api-keys';

export interface AdminPrincipal {
  via: 'admin_token' | 'access_token';
  /** The administrator's account (access tokens only). */
  userId?: number;
}

export interface AdminState {
  admin?: AdminPrincipal;
}

export interface AdminGuardDeps {
  adminToken: string | undefined;
  tokens: AccessTokens;
  db: Db | null;
  /** The auth-failure blocklist: blocked sources get 429 first, and bad credentials count. */
  gate: AuthGate;
  /** API keys: a valid key is a known caller without admin rights (403, not 401). */
  keys?: ApiKeyCache | undefined;
}

/** The database of an admin request, or 500 `Database not configured`. */
export function adminDb(db: Db | null): Db {
  if (!db) throw new AppError('database_not_configured', 'Database not configured');
  return db;
}

/** The administrator presenting `authorization`, or a 429 (blocked source) / 401 / 403 error. */
export async function authenticateAdmin(deps: AdminGuardDeps, authorization: string | undefined, client: ClientIpInfo, path: string): Promise<AdminPrincipal> {
  deps.gate.refuseBlocked(client, undefined);
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthorized', 'Admin credentials required (Authorization: Bearer <admin token or administrator access token>)');
  if (isAdminToken(token, deps.adminToken)) return { via: 'admin_token' };
  const principal = deps.tokens.verify(token);
  if (!principal && credentialState(deps.keys?.lookup(token)) === 'valid') {
    throw new AppError('forbidden', 'API keys do not open the admin API: present ADMIN_TOKEN or an administrator access token');
  }
  if (!principal) {
    deps.gate.recordFailure(client, { path, reason: 'invalid_admin_credential', credential: token });
    throw new AppError('unauthorized', 'Invalid or expired admin credentials');
  }
  if (principal.kind === 'impersonation') throw new AppError('forbidden', "An impersonation token acts as a user only: the admin API needs the administrator's own sign-in");
  if (principal.role !== 'admin') throw new AppError('forbidden', 'Administrator role required');
  const db = adminDb(deps.db);
  const user = await readAccount(db, principal.userId);
  if (!user || accountState(user) !== 'valid') throw new AppError('unauthorized', 'Invalid or expired admin credentials');
  if (user.role !== 'admin') throw new AppError('forbidden', 'Administrator role required');
  return { via: 'access_token', userId: principal.userId };
}

/**
 * The access guard of every gateway admin route (lib/http/route-access.ts): an administrator,
 * then a database (500 `Database not configured` without one).
 */
export function adminAccess<StateT extends AdminState & { client?: ClientIpInfo }>(deps: AdminGuardDeps): AccessGuard<StateT> {
  return accessGuard<StateT>('admin', async (ctx) => {
    if (!ctx.state.client) throw new AppError('internal', 'admin request without a resolved client');
    ctx.state.admin = await authenticateAdmin(deps, ctx.get('authorization') || undefined, ctx.state.client, ctx.path);
    adminDb(deps.db);
  });
}
