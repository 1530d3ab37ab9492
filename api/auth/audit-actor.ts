/**
 * Who an operator request acts as, for the audit log (agent/audit/audit-log.ts): the account's
 * user id, or `admin_token` when `ADMIN_TOKEN` was presented, and the caller's address.
 */
import type { ParameterizedContext } from 'koa';
import { AppError } from '../../lib/errors';
import type { AuditActor, AuditBy } from '../../agent/audit/audit-log';
import type { AgentState } from './principals';

/**
 * The audit actor of an operator route. The address is the socket peer: the control-plane API
 * does not read forwarding headers (docs/agent-audit.md), so behind a proxy it names the proxy.
 */
export function operatorAudit(ctx: ParameterizedContext<AgentState>): AuditBy {
  const operator = ctx.state.operator;
  if (!operator) throw new AppError('internal', 'operator route without an authenticated operator');
  const actor: AuditActor = operator.userId !== undefined ? { type: 'user', userId: operator.userId } : { type: 'admin_token' };
  return { actor, actorIp: ctx.req.socket.remoteAddress ?? null };
}
