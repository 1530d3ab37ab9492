/**
 * Releasing a server allocation (`DELETE /admin/agent/servers/<allocation_id>` with
 * `{expected_revision: N}`, a revision conflict requires a refresh; docs/agent-hosts.md "Server
 * allocations"). Two steps, so no transaction stays open while Temporal answers:
 *
 * 1. {@link claimRelease}: the allocation row locked `FOR UPDATE`; 404 unknown, 409 already
 *    released, 409 when `N` is not the current revision (the answer names it: refresh). Otherwise
 *    an `active` allocation becomes `releasing` (revision + 1, who asked) and commits. Two
 *    concurrent releases naming the same revision: the second waits for the lock, then finds the
 *    revision moved on and gets 409. Refusals are audited `refused` on their own afterwards.
 * 2. The host goes through the guarded removal of its workflow (agent/hosts/host-delivery.ts
 *    `sendHostAction` `remove`, agent/hosts/host-removal.ts). Nothing holds it: the host is removed
 *    and, in that transaction, the allocation `released` (200). Something holds it: the host
 *    drains (202); the drain's last step releases the allocation in its own transaction.
 *
 * A release naming the current revision of an allocation already `releasing` changes nothing and
 * asks the host's workflow again (the same drain), which repairs a release whose first request to
 * the workflow failed (503) or whose drain was taken back by enrolling the host again.
 */
import type { Db } from '../../lib/db';
import { AppError, isAppError, type ErrorCode } from '../../lib/errors';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import { sendHostAction, type HostDeliveryDeps } from '../hosts/host-delivery';
import { allocationTarget } from './host-allocations';
import { getAllocation, type AllocationState, type AllocationView } from './server-allocations';

/** A release the allocation row now records (`releasing`). */
export interface ReleaseClaim {
  allocationId: string;
  hostId: string;
  /** The revision after the claim. */
  revision: number;
  /** False when the allocation was already `releasing` (nothing changed). */
  fresh: boolean;
}

/** A 409 with the facts its audit row records. */
class ReleaseRefused extends AppError {
  constructor(message: string, readonly facts: { hostId: string; revision: number }) {
    super('conflict', message, { param: 'expected_revision' });
  }
}

/** Step 1: checks the revision and marks the allocation `releasing` (see the module comment). */
export async function claimRelease(db: Db, allocationId: string, expectedRevision: number, by: AuditBy): Promise<ReleaseClaim> {
  try {
    return await db.transaction(async (trx) => {
      const row = await trx('agent_server_allocations').where({ id: allocationId }).forUpdate()
        .first<{ host_id: string; state: AllocationState; revision: number } | undefined>('host_id', 'state', 'revision');
      if (!row) throw new AppError('not_found', `Server allocation not found: ${allocationId}`);
      const facts = { hostId: row.host_id, revision: row.revision };
      if (row.state === 'released') {
        throw new ReleaseRefused(`Server allocation ${allocationId} is already released (revision ${row.revision})`, facts);
      }
      if (row.revision !== expectedRevision) {
        throw new ReleaseRefused(
          `Server allocation ${allocationId} is at revision ${row.revision}, not ${expectedRevision}: it changed since it was read. `
          + `Refresh it (GET /admin/agent/servers/${allocationId}) and send expected_revision ${row.revision} if it should still be released`,
          facts,
        );
      }
      if (row.state === 'releasing') return { allocationId, hostId: row.host_id, revision: row.revision, fresh: false };
      const [updated] = await trx('agent_server_allocations').where({ id: allocationId }).update({
        state: 'releasing', revision: trx.raw('revision + 1'), updated_at: trx.fn.now(), release_requested_at: trx.fn.now(),
        released_by: JSON.stringify({ actor: by.actor, actorIp: by.actorIp ?? null }),
      }).returning<Array<{ revision: number }>>('revision');
      return { allocationId, hostId: row.host_id, revision: updated!.revision, fresh: true };
    });
  } catch (err) {
    if (err instanceof ReleaseRefused) {
      await recordAudit(db, {
        ...by, category: 'servers', action: 'agent.server.delete', target: allocationTarget(allocationId), outcome: 'refused', reason: err.message,
        details: { allocation_id: allocationId, host_id: err.facts.hostId, expected_revision: expectedRevision, revision: err.facts.revision },
      });
    }
    throw err;
  }
}

/**
 * Releases allocation `allocationId` if `expectedRevision` is its current revision; answers the
 * allocation afterwards: `released` (its host removed) or `releasing` (its host drains).
 */
export async function releaseAllocation(deps: HostDeliveryDeps, allocationId: string, expectedRevision: number, by: AuditBy): Promise<AllocationView> {
  const claim = await claimRelease(deps.db, allocationId, expectedRevision, by);
  try {
    await sendHostAction(deps, claim.hostId, { action: 'remove', by: { actor: by.actor, actorIp: by.actorIp ?? null } });
  } catch (err) {
    const now = await getAllocation(deps.db, allocationId);
    if (now.state === 'released') return now;
    // The allocation exists: a host the workflow no longer knows is a conflict, not a 404 of this route.
    const code: ErrorCode = !isAppError(err) ? 'service_unavailable' : err.code === 'not_found' ? 'conflict' : err.code;
    const reason = err instanceof Error ? err.message : String(err);
    throw new AppError(code, `Server allocation ${allocationId} is releasing (revision ${now.revision}), but its host ${claim.hostId} could not be asked to drain: ${reason}. `
      + `Send the DELETE again with expected_revision ${now.revision}`, { cause: err });
  }
  return getAllocation(deps.db, allocationId);
}
