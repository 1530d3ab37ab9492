/**
 * THE place where the outcome of every operator action on a sandbox group is known
 * (docs/sandboxes.md "Audit", issue 17 item 6: "every admin action writes an audit row (actor,
 * target, reason, outcome)"). Called once per outcome: `refused` (condition failed in PostgreSQL,
 * or the host did not confirm before acceptance; the API calls it too for a refusal by the
 * workflow's Update validator), `completed` (the action's effect is recorded) and `failed`
 * (accepted, then the host did not confirm; the group is back in its previous state). Except for
 * the validator's refusal (no transaction: the API passes its pool), it runs inside the transaction
 * that makes the change, so the audit row (agent/audit/audit-log.ts `recordAudit`, category
 * `sandboxes`, or `deletion` when the deletion sweeper (actor `system:user-deletion-sweeper`)
 * asked; the idle stop's, actor `system:idle-sandbox-stopper`, stay under `sandboxes`; actions
 * `agent.sandbox.stop_idle`, `.delete`, `.force_delete`, `.remove_stale` / `.remove_inventory`,
 * `.restore_inventory`) commits with it.
 */
import type { Knex } from 'knex';
import type { SandboxAction, SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';
import { recordAudit, USER_DELETION_SWEEPER, type AuditActor, type AuditCategory, type AuditOutcome } from '../audit/audit-log';

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

/** The request `actor` of a system actor: `system:<name>` (the deletion sweeper sends `system:user-deletion-sweeper`). */
export function systemRequestActor(actor: Extract<AuditActor, { type: 'system' }>): string {
  return `system:${actor.name}`;
}

/** The audit actor of a request's `actor` (`user:<id>` or `admin-token` as the API writes it, or `system:<name>`). */
export function sandboxAuditActor(actor: string): AuditActor {
  const user = /^user:(\d+)$/.exec(actor);
  if (user) return { type: 'user', userId: Number(user[1]) };
  const system = /^system:([a-z0-9][a-z0-9-]{0,63})$/.exec(actor);
  return system ? { type: 'system', name: system[1]! } : { type: 'admin_token' };
}

/** Actions the deletion sweeper takes are filed under `deletion` (docs/agent-audit.md); an operator's under `sandboxes`. */
function categoryOf(actor: AuditActor): AuditCategory {
  return actor.type === 'system' && actor.name === USER_DELETION_SWEEPER.name ? 'deletion' : 'sandboxes';
}

/** Records an action's outcome as one audit row (category `sandboxes`), in the caller's transaction. */
export async function noteSandboxActionOutcome(db: Knex | Knex.Transaction, outcome: SandboxActionOutcome): Promise<void> {
  const { request } = outcome;
  const actor = sandboxAuditActor(request.actor);
  await recordAudit(db, {
    actor,
    actorIp: request.actorIp ?? null,
    category: categoryOf(actor),
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
