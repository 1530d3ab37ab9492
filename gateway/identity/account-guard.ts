/**
 * The guards of the caller's own account routes (`/auth/me`, `/auth/api-keys`, `/auth/password`,
 * `/auth/impersonations`): an access token whose account is active now (re-read from the
 * database). Two access kinds:
 * - `account`: the account's own token, or an impersonation token whose impersonation is still
 *   honoured (docs/identity.md "Impersonation"): support sees what the user sees;
 * - `credentials`: routes that mint API keys or change how the account signs in. An impersonation
 *   token is refused here (403), by this one declared check, so no such route can forget it.
 */
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, type AccessGuard } from '../../lib/http/route-access';
import type { AccessPrincipal } from '../../lib/identity/access-tokens';
import { assertImpersonationLive } from '../../lib/identity/impersonation';
import type { ClientIpInfo } from '../../lib/client-address/client-address';
import type { GatewayDeps } from '../deps';
import type { GatewayState } from '../surfaces/state';
import { findUserById, type UserRow } from './accounts';
import type { ParameterizedContext } from 'koa';

type Ctx = ParameterizedContext<GatewayState>;

function clientOf(ctx: Ctx): ClientIpInfo {
  if (!ctx.state.client) throw new AppError('internal', 'request reached an auth route without a resolved client');
  return ctx.state.client;
}

/** The gateway's database, or 500 `Database not configured`. */
export function accountDb(deps: GatewayDeps) {
  if (!deps.database.db) throw new AppError('database_not_configured', 'Database not configured');
  return deps.database.db;
}

/** The account behind a Bearer access token, active now (not suspended or deleted), with the token's principal; else 401. */
async function accountOf(ctx: Ctx, deps: GatewayDeps): Promise<{ user: UserRow; principal: AccessPrincipal }> {
  const token = bearerToken(ctx.get('authorization') || undefined);
  const principal = token ? deps.tokens.verify(token) : undefined;
  if (!principal) {
    if (token) deps.gate.recordFailure(clientOf(ctx), { path: ctx.path, reason: 'invalid_access_token' });
    throw new AppError('unauthorized', 'A valid access token is required (Authorization: Bearer <access_token> from POST /auth/login)');
  }
  const db = accountDb(deps);
  await assertImpersonationLive(db, principal);
  const user = await findUserById(db, principal.userId);
  if (!user || user.deleted_at || user.suspended_at) throw new AppError('unauthorized', 'The account of this access token is not active');
  return { user, principal };
}

export interface AccountGuards {
  /** The account's own token or a live impersonation token. */
  account: AccessGuard<GatewayState>;
  /** The account's own token only (minting keys, changing credentials). */
  credentials: AccessGuard<GatewayState>;
}

export function accountGuards(deps: GatewayDeps): AccountGuards {
  const account = accessGuard<GatewayState>('account', async (ctx) => {
    const { user, principal } = await accountOf(ctx, deps);
    ctx.state.accountId = Number(user.id);
    ctx.state.accountToken = principal;
  });
  const credentials = accessGuard<GatewayState>('credentials', async (ctx) => {
    const { user, principal } = await accountOf(ctx, deps);
    if (principal.kind === 'impersonation') {
      throw new AppError('forbidden', 'An impersonation token cannot mint API keys or change credentials: only the account holder, signed in, can');
    }
    ctx.state.accountId = Number(user.id);
    ctx.state.accountToken = principal;
  });
  return { account, credentials };
}

/** The account id set by the `account` or `credentials` guard. */
export function accountIdOf(state: GatewayState): number {
  if (state.accountId === undefined) throw new AppError('internal', 'account route without an authenticated account');
  return state.accountId;
}
