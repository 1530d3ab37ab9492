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
 * `.restore_inventory`) commits with it. Wiring it is left to the audit log's owner.
 */
import type { Knex } from 'knex';
import type { SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';

export interface SandboxActionOutcome {
  groupId: string;
  request: SandboxActionRequest;
  outcome: 'refused' | 'completed' | 'failed';
  /** The group's state after the outcome, when known. */
  state?: SandboxState;
  /** Why it was refused or failed. */
  reason?: string;
}

/** Records an action's outcome (today: nothing; the audit log writes its row here). */
export async function noteSandboxActionOutcome(_db: Knex | Knex.Transaction, _outcome: SandboxActionOutcome): Promise<void> {
  // Audit log (agent/audit/): insert { actor: request.actor, target: groupId, action, reason, outcome } here.
  await Promise.resolve();
}
