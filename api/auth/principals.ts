/**
 * Who is calling the control-plane API. Owners (`agent.use`) present a gateway API key or an
 * access token; operators present `ADMIN_TOKEN` or the access token of an account holding
 * `agent.admin` (or the admin role). Keys and accounts are re-read from PostgreSQL on every request
 * (lib/identity: the same validity rule as the gateway's key cache), so a revoked key, a suspended
 * owner or a withdrawn permission loses access at once.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, type AccessGuard } from '../../lib/http/route-access';
import type { RequestState } from '../../lib/http/request-context';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import type { AccessTokens } from '../../lib/identity/access-tokens';
import { readAccount, type AccountRecord } from '../../lib/identity/accounts';
import { isAdminToken } from '../../lib/identity/admin-token';
import { authenticateApiKeyFresh } from '../../lib/identity/api-keys';
import { assertImpersonationLive } from '../../lib/identity/impersonation';
import { accountState } from '../../lib/identity/credential-state';
import { authenticateHost } from '../../agent/hosts/host-registry';

export interface OwnerPrincipal {
  userId: number;
  role: string;
  permissions: readonly string[];
}

export interface OperatorPrincipal {
  via: 'admin_token' | 'access_token';
  userId?: number;
  /** The operator's sign-in (refresh-session family) behind the access token, when it names one. */
  sessionId?: string;
}

export interface AgentState extends RequestState {
  owner?: OwnerPrincipal;
  operator?: OperatorPrincipal;
  /** The enrolled host whose credential the request presented (host routes). */
  hostId?: string;
  /** The caller's address, resolved once when the request started (docs/client-address.md). */
  client?: ClientIpInfo;
}

export interface PrincipalDeps {
  db: Db;
  tokens: AccessTokens;
  adminToken: string | undefined;
}

/** The account of an access token's subject when it may act now, or undefined. */
async function activeAccount(db: Db, userId: number): Promise<AccountRecord | undefined> {
  const account = await readAccount(db, userId);
  return accountState(account) === 'valid' ? account : undefined;
}

/** The active account behind a bearer credential (access token, or an API key that is valid now), or undefined. */
async function accountFor(deps: PrincipalDeps, token: string): Promise<AccountRecord | undefined> {
  const claims = deps.tokens.verify(token);
  if (claims) {
    // An impersonation token acts as its user while the impersonation is honoured (docs/identity.md).
    await assertImpersonationLive(deps.db, claims);
    return activeAccount(deps.db, claims.userId);
  }
  const key = await authenticateApiKeyFresh(deps.db, token);
  return key.state === 'valid' ? key.owner : undefined;
}

/** Authenticates an owner: 401 without a valid credential, 403 without `agent.use`. */
export async function authenticateOwner(deps: PrincipalDeps, authorization: string | undefined): Promise<OwnerPrincipal> {
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthorized', 'Credentials required (Authorization: Bearer <API key or access token>)');
  const user = await accountFor(deps, token);
  if (!user) throw new AppError('unauthorized', 'Invalid or expired credentials');
  if (!user.permissions.includes('agent.use')) throw new AppError('forbidden', 'The agent.use permission is required');
  return { userId: user.userId, role: user.role, permissions: user.permissions };
}

/** Authenticates an operator: `ADMIN_TOKEN`, or an account with `agent.admin` or the admin role. */
export async function authenticateOperator(deps: PrincipalDeps, authorization: string | undefined): Promise<OperatorPrincipal> {
  const token = bearerToken(authorization);
  if (!token) throw new AppError('unauthorized', 'Admin credentials required (Authorization: Bearer <admin token or access token>)');
  if (isAdminToken(token, deps.adminToken)) return { via: 'admin_token' };
  const claims = deps.tokens.verify(token);
  if (!claims) {
    if ((await authenticateApiKeyFresh(deps.db, token)).state === 'valid') {
      throw new AppError('forbidden', 'API keys do not open operator routes: present ADMIN_TOKEN or the access token of an account with agent.admin');
    }
    throw new AppError('unauthorized', 'Invalid or expired admin credentials');
  }
  if (claims.kind === 'impersonation') throw new AppError('forbidden', "An impersonation token acts as a user only: operator routes need the administrator's own sign-in");
  const operator = await currentOperator(deps, claims.userId, 'Invalid or expired admin credentials');
  return claims.sessionId ? { ...operator, sessionId: claims.sessionId } : operator;
}

/**
 * The operator account `userId`, checked now (an access token's subject, or the operator a database
 * tool session names: each proxy request checks current `agent.admin`): 401 when the
 * account is gone, suspended or deleted, 403 without `agent.admin` or the admin role.
 */
export async function currentOperator(deps: PrincipalDeps, userId: number, goneMessage = 'The account that opened this session can no longer act'): Promise<OperatorPrincipal> {
  const user = await activeAccount(deps.db, userId);
  if (!user) throw new AppError('unauthorized', goneMessage);
  if (user.role !== 'admin' && !user.permissions.includes('agent.admin')) throw new AppError('forbidden', 'The agent.admin permission is required');
  return { via: 'access_token', userId: user.userId };
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
