/**
 * Who an operator request acts as, for the audit log (agent/audit/audit-log.ts): the account's
 * user id, or `admin_token` when `ADMIN_TOKEN` was presented, and the caller's address.
 */
import type { ParameterizedContext } from 'koa';
import { AppError } from '../../lib/errors';
import type { AuditActor, AuditBy } from '../../agent/audit/audit-log';
import type { AgentState } from './principals';

/**
 * The caller's address for the audit log: the resolved client address (forwarding headers count
 * only from a trusted proxy such as the gateway, docs/client-address.md), else the socket peer
 * (an unresolved address names the nearest hop rather than nothing).
 */
export function callerAddress(ctx: ParameterizedContext<AgentState>): string | null {
  const client = ctx.state.client;
  return client?.resolved ? client.client_ip : (ctx.req.socket.remoteAddress ?? null);
}

/** The audit actor of an operator route: who acted and from which address ({@link callerAddress}). */
export function operatorAudit(ctx: ParameterizedContext<AgentState>): AuditBy {
  const operator = ctx.state.operator;
  if (!operator) throw new AppError('internal', 'operator route without an authenticated operator');
  const actor: AuditActor = operator.userId !== undefined ? { type: 'user', userId: operator.userId } : { type: 'admin_token' };
  return { actor, actorIp: callerAddress(ctx) };
}
