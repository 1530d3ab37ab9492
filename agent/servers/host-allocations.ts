/**
 * Where host removal meets server allocations (docs/agent-hosts.md "Server allocations"):
 *
 * - {@link releaseAllocationsOfRemovedHost}: called by agent/hosts/host-removal.ts in the
 *   transaction that removes a host (at once, or when its drain completes): the host's allocation
 *   that is not released yet becomes `released` (revision + 1), audited `agent.server.delete`
 *   `succeeded` in that same transaction.
 * - {@link noteAllocationsDraining}: called in the transaction that starts a host's drain: a
 *   `releasing` allocation of that host is audited `agent.server.delete` `requested`, the reason
 *   naming what holds the host.
 * - {@link refuseAllocatedHost}: `DELETE /admin/agent/runner-hosts/<host>` is the removal of a host
 *   *without* allocation; an allocated host answers 409 naming its allocation.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import { noteHostActionRefused } from '../hosts/host-observation';
import type { HostAction } from '../../workflows/definitions/host';

/** The audit target of an allocation. */
export const allocationTarget = (allocationId: string) => ({ type: 'server_allocation', id: allocationId }) as const;

interface HoldingRow {
  id: string;
  state: 'active' | 'releasing';
  revision: number;
  released_by: AuditBy | null;
}

/** The host's allocation that is not released (at most one: a partial unique index), locked when `lock`. */
function holdingRows(trx: Knex | Knex.Transaction, hostId: string): Knex.QueryBuilder {
  return trx('agent_server_allocations').where({ host_id: hostId }).whereNot('state', 'released').select('id', 'state', 'revision', 'released_by');
}

/**
 * Releases what allocates a host that is being removed in `trx`. The actor is whoever asked for
 * the release (stored with it); for an allocation still `active` (its host removed by another
 * path), whoever removed the host. `expected_revision` in the audit row is the revision the
 * release named (the one before `releasing`), null when no release was asked for.
 */
export async function releaseAllocationsOfRemovedHost(trx: Knex.Transaction, hostId: string, by: AuditBy): Promise<void> {
  const rows = (await holdingRows(trx, hostId).forUpdate()) as HoldingRow[];
  for (const row of rows) {
    const releasedBy: AuditBy = row.released_by ?? { actor: by.actor, actorIp: by.actorIp ?? null };
    const [updated] = await trx('agent_server_allocations').where({ id: row.id }).update({
      state: 'released', revision: trx.raw('revision + 1'), updated_at: trx.fn.now(), released_at: trx.fn.now(),
      release_requested_at: trx.raw('coalesce(release_requested_at, now())'), released_by: JSON.stringify(releasedBy),
    }).returning<Array<{ revision: number }>>('revision');
    const id = String(row.id);
    await recordAudit(trx, {
      ...releasedBy, category: 'servers', action: 'agent.server.delete', target: allocationTarget(id), outcome: 'succeeded',
      ...(row.state === 'active' ? { reason: `Host ${hostId} was removed` } : {}),
      details: { allocation_id: id, host_id: hostId, expected_revision: row.state === 'releasing' ? row.revision - 1 : null, revision: updated!.revision },
    });
  }
}

/** Audits the start of a releasing allocation's drain (`requested`), in the transaction that starts it. */
export async function noteAllocationsDraining(trx: Knex.Transaction, hostId: string, held: string[], by: AuditBy): Promise<void> {
  const rows = (await holdingRows(trx, hostId).where({ state: 'releasing' })) as HoldingRow[];
  for (const row of rows) {
    const id = String(row.id);
    await recordAudit(trx, {
      ...(row.released_by ?? by),
      category: 'servers', action: 'agent.server.delete', target: allocationTarget(id), outcome: 'requested',
      reason: `Host ${hostId} still has ${held.join(', ')}; the allocation is released once the host drains`,
      details: { allocation_id: id, host_id: hostId, expected_revision: row.revision - 1, revision: row.revision, held },
    });
  }
}

/**
 * 409 (audited `refused` under the host action) when host `hostId` has an allocation that is not
 * released: such a host leaves through `DELETE /admin/agent/servers/<id>`, and a drain started by
 * a release is not cancelled behind the allocation's back.
 */
export async function refuseAllocatedHost(db: Db, hostId: string, action: Extract<HostAction, 'remove' | 'cancel_removal'>, by: AuditBy): Promise<void> {
  const row = (await holdingRows(db, hostId).first()) as HoldingRow | undefined;
  if (!row || (action === 'cancel_removal' && row.state !== 'releasing')) return;
  const id = String(row.id);
  const reason = action === 'remove'
    ? `Host ${hostId} is allocated (server allocation ${id}, ${row.state}); release it with DELETE /admin/agent/servers/${id}`
    : `Host ${hostId} is being released by server allocation ${id}; its removal cannot be cancelled here`;
  await noteHostActionRefused(db, { hostId, action, by, reason });
  throw new AppError('conflict', reason);
}
