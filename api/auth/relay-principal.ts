/**
 * The access guard of the tool relay's routes: a relay credential (`mcp_…` or `amr.…`, docs/mcp.md
 * "Relay credentials") resolved on every request to the chat's current leased attempt. Anything
 * else (no credential, an owner's key, a host's credential, a rotated or idle credential) is 401.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { bearerToken } from '../../lib/http/json-body';
import { accessGuard, type AccessGuard } from '../../lib/http/route-access';
import { resolveRelayCredential, type RelayPrincipal } from '../../agent/tools/relay-credentials';
import type { AgentState } from './principals';

/** The state of a relay route: the principal and the credential presented (re-checked after waits). */
export interface RelayState extends AgentState {
  relay?: { principal: RelayPrincipal; token: string };
}

/** Requires a relay credential that resolves now; sets `ctx.state.relay`. */
export function requireRelay(db: Db, staleSeconds: () => number): AccessGuard<RelayState> {
  return accessGuard<RelayState>('relay', async (ctx) => {
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (!token) throw new AppError('unauthorized', 'A tool relay credential is required (Authorization: Bearer mcp_… or amr.…)');
    ctx.state.relay = { principal: await resolveRelayCredential(db, token, staleSeconds()), token };
  });
}

/** The relay principal of a relay route (set by `requireRelay`). */
export function relayOf(state: RelayState): { principal: RelayPrincipal; token: string } {
  if (!state.relay) throw new AppError('internal', 'relay route without a resolved credential');
  return state.relay;
}
