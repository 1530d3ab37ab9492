/**
 * THE place where the outcome of every operator action on a sandbox group is known (spec 3.4,
 * issue 17 item 6: "every admin action writes an audit row (actor, target, reason, outcome)").
 * Called once per outcome: `refused` (condition failed in PostgreSQL, or the host did not confirm
 * before acceptance; the API calls it too for a refusal by the workflow's Update validator),
 * `completed` (the action's effect is recorded) and `failed` (accepted, then the host did not
 * confirm; the group is back in its previous state). Except for the validator's refusal (no
 * transaction: the API passes its pool), it runs inside the transaction that makes the change, so
 * the audit row (agent/audit/audit-log.ts `recordAudit`, category `sandboxes`, actions
 * `agent.sandbox.stop_idle`, `.delete`, `.force_delete`, `.remove_stale` / `.remove_inventory`,
 * `.restore_inventory`) commits with it.
 */
import type { Knex } from 'knex';
import type { SandboxAction, SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';
import { recordAudit, type AuditActor, type AuditOutcome } from '../audit/audit-log';

export interface SandboxActionOutcome {
  groupId: string;
  request: SandboxActionRequest;
  outcome: 'refused' | 'completed' | 'failed';
  /** The group's state after the outcome, when known. */
  state?: SandboxState;
  /** Why it was refused or failed. */
  reason?: string;
}

const AUDIT_ACTION: Record<SandboxAction, `agent.sandbox.${string}`> = {
  stop: 'agent.sandbox.stop_idle',
  delete: 'agent.sandbox.delete',
  force_delete: 'agent.sandbox.force_delete',
  archive_delete: 'agent.sandbox.archive_delete',
  remove_from_inventory: 'agent.sandbox.remove_inventory',
  restore_to_inventory: 'agent.sandbox.restore_inventory',
};

const AUDIT_OUTCOME: Record<SandboxActionOutcome['outcome'], AuditOutcome> = { refused: 'refused', completed: 'succeeded', failed: 'failed' };

/** The audit actor of a request's `actor` (`user:<id>` or `admin-token`, as the API writes it). */
export function sandboxAuditActor(actor: string): AuditActor {
  const user = /^user:(\d+)$/.exec(actor);
  return user ? { type: 'user', userId: Number(user[1]) } : { type: 'admin_token' };
}

/** Records an action's outcome as one audit row (category `sandboxes`), in the caller's transaction. */
export async function noteSandboxActionOutcome(db: Knex | Knex.Transaction, outcome: SandboxActionOutcome): Promise<void> {
  const { request } = outcome;
  await recordAudit(db, {
    actor: sandboxAuditActor(request.actor),
    actorIp: request.actorIp ?? null,
    category: 'sandboxes',
    action: AUDIT_ACTION[request.action],
    target: { type: 'sandbox', id: outcome.groupId },
    reason: outcome.reason ?? null,
    outcome: AUDIT_OUTCOME[outcome.outcome],
    details: {
      generation: request.generation,
      ...(request.containerId !== undefined ? { container_id: request.containerId } : {}),
      ...(outcome.state !== undefined ? { state: outcome.state } : {}),
    },
  });
}
