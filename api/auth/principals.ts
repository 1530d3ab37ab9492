/**
 * Who is calling the control-plane API. Owners (`agent.use`) present a gateway API key or an
 * access token; operators present `ADMIN_TOKEN` or the access token of an account holding
 * `agent.admin` (or the admin role). Accounts are re-read from PostgreSQL on every request, so a
 * suspended owner or a withdrawn permission loses access at once.
 */
import type { Db } from '../../lib/db';
import { hashSecret } from '../../lib/crypto';
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, type AccessGuard } from '../../lib/http/route-access';
import type { RequestState } from '../../lib/http/request-context';
import type { AccessTokens } from '../../lib/identity/access-tokens';
import { isAdminToken } from '../../lib/identity/admin-token';
import { authenticateHost } from '../../agent/hosts/host-registry';

export interface OwnerPrincipal {
  userId: number;
  role: string;
  permissions: readonly string[];
}

export interface OperatorPrincipal {
  via: 'admin_token' | 'access_token';
  userId?: number;
}

export interface AgentState extends RequestState {
  owner?: OwnerPrincipal;
  operator?: OperatorPrincipal;
  /** The enrolled host whose credential the request presented (host routes). */
  hostId?: string;
}

export interface PrincipalDeps {
  db: Db;
  tokens: AccessTokens;
  adminToken: string | undefined;
}

interface UserRow {
  id: string;
  role: string;
  permissions: string[];
  suspended_at: Date | null;
  deleted_at: Date | null;
}

const USER_COLUMNS = ['u.id', 'u.role', 'u.permissions', 'u.suspended_at', 'u.deleted_at'];

/** The account behind a bearer credential (API key or access token), or undefined. */
async function userFor(deps: PrincipalDeps, token: string): Promise<UserRow | undefined> {
  const claims = deps.tokens.verify(token);
  if (claims) return deps.db('users as u').where('u.id', claims.userId).first<UserRow | undefined>(USER_COLUMNS);
  return deps.db('api_keys as k')
    .join('users as u', 'u.id', 'k.user_id')
    .where('k.key_hash', hashSecret(token))
    .whereNull('k.revoked_at')
    .where((q) => q.whereNull('k.expires_at').orWhere('k.expires_at', '>', deps.db.fn.now()))
    .first<UserRow | undefined>(USER_COLUMNS);
}

/** Authenticates an owner: 401 without a valid credential, 403 without `agent.use`. */
export async function authenticateOwner(deps: PrincipalDeps, authorization: string | undefined): Promise<OwnerPrincipal> {
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthorized', 'Credentials required (Authorization: Bearer <API key or access token>)');
  const user = await userFor(deps, token);
  if (!user || user.suspended_at || user.deleted_at) throw new AppError('unauthorized', 'Invalid or expired credentials');
  if (!user.permissions.includes('agent.use')) throw new AppError('forbidden', 'The agent.use permission is required');
  return { userId: Number(user.id), role: user.role, permissions: user.permissions };
}

/** Authenticates an operator: `ADMIN_TOKEN`, or an account with `agent.admin` or the admin role. */
export async function authenticateOperator(deps: PrincipalDeps, authorization: string | undefined): Promise<OperatorPrincipal> {
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthorized', 'Admin credentials required (Authorization: Bearer <admin token or access token>)');
  if (isAdminToken(token, deps.adminToken)) return { via: 'admin_token' };
  const claims = deps.tokens.verify(token);
  if (!claims) {
    const keyUser = await userFor(deps, token);
    if (keyUser && !keyUser.suspended_at && !keyUser.deleted_at) {
      throw new AppError('forbidden', 'API keys do not open operator routes: present ADMIN_TOKEN or the access token of an account with agent.admin');
    }
    throw new AppError('unauthorized', 'Invalid or expired admin credentials');
  }
  const user = await deps.db('users as u').where('u.id', claims.userId).first<UserRow | undefined>(USER_COLUMNS);
  if (!user || user.suspended_at || user.deleted_at) throw new AppError('unauthorized', 'Invalid or expired admin credentials');
  if (user.role !== 'admin' && !user.permissions.includes('agent.admin')) throw new AppError('forbidden', 'The agent.admin permission is required');
  return { via: 'access_token', userId: Number(user.id) };
}

/** The access guard of an owner route (`agent.use`): sets `ctx.state.owner`. */
export function requireOwner(deps: PrincipalDeps): AccessGuard<AgentState> {
  return accessGuard<AgentState>('owner', async (ctx) => {
    ctx.state.owner = await authenticateOwner(deps, ctx.get('authorization') || undefined);
  });
}

/** The access guard of an operator route (`agent.admin`): sets `ctx.state.operator`. */
export function requireOperator(deps: PrincipalDeps): AccessGuard<AgentState> {
  return accessGuard<AgentState>('operator', async (ctx) => {
    ctx.state.operator = await authenticateOperator(deps, ctx.get('authorization') || undefined);
  });
}

/** The access guard of a host route: the credential of the host named by the `:hostId` parameter. */
export function requireHost(db: Db): AccessGuard<AgentState> {
  return accessGuard<AgentState>('host', async (ctx) => {
    ctx.state.hostId = await authenticateHost(db, (ctx.params as Record<string, string | undefined>).hostId ?? '', bearerToken(ctx.get('authorization') || undefined));
  });
}

/** The host of a host route (set by `requireHost`). */
export function hostOf(state: AgentState): string {
  if (!state.hostId) throw new AppError('internal', 'host route without an authenticated host');
  return state.hostId;
}

/** The owner of an owner route (set by `requireOwner`). */
export function ownerOf(state: AgentState): OwnerPrincipal {
  if (!state.owner) throw new AppError('internal', 'owner route without an authenticated owner');
  return state.owner;
}
