/**
 * Guarded host removal of a host without allocation (docs/agent-hosts.md
 * "Removal"), as the host workflow (`host:<hostId>`) drives it through its activities:
 *
 * - {@link requestHostRemoval}: a host that holds nothing is removed at once; otherwise
 *   `removal_requested_at` (and who asked) is set and the host drains: placement gives it no new
 *   work (agent/hosts/placement.ts), running turns finish.
 * - {@link finishHostRemoval}: the workflow's periodic check; removes the host once nothing holds it.
 * - {@link cancelHostRemoval}: the operator takes the request back; the host is placed on again.
 *
 * Every step runs with the host row locked `FOR UPDATE`, so no placement slips in between the
 * check and the removal, and writes its audit row (category `hosts`) in the same transaction:
 * `agent.host.removed` `requested` / `succeeded`, `agent.host.removal_cancelled` `succeeded`.
 * The host's server allocation follows in that transaction (agent/servers/host-allocations.ts):
 * released when the host is removed, its release audited `requested` when the drain starts.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret } from '../../lib/crypto';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import { noteAllocationsDraining, releaseAllocationsOfRemovedHost } from '../servers/host-allocations';
import { HOST_ID } from './host-registry';

/** A removal's state after a step. */
export type RemovalStep =
  | { kind: 'not_found' }
  | { kind: 'removed'; tombstone: boolean }
  | { kind: 'draining'; requestedAt: string; held: string[]; alreadyRequested: boolean }
  | { kind: 'not_requested' };

interface LockedHost {
  removal_requested_at: Date | null;
  removal_requested_by: AuditBy | null;
}

async function lockHost(trx: Knex.Transaction, hostId: string): Promise<LockedHost | undefined> {
  if (!HOST_ID.test(hostId)) return undefined;
  return trx('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').forUpdate()
    .first<LockedHost | undefined>('removal_requested_at', 'removal_requested_by');
}

const auditOf = (hostId: string) => ({ category: 'hosts', target: { type: 'host', id: hostId } }) as const;

/** What still holds a host: running attempts, retained (not cold) sandboxes, chats placed on it (not deleted). */
export async function allocationsOf(trx: Knex.Transaction, hostId: string): Promise<string[]> {
  const count = async (query: Knex.QueryBuilder): Promise<number> =>
    Number((await query.count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
  const held: string[] = [];
  const attempts = await count(trx('agent_attempts').where({ host_id: hostId, state: 'running' }));
  if (attempts > 0) held.push(`${attempts} running turn(s)`);
  const sandboxes = await count(trx('agent_sandboxes').where({ host_id: hostId }).whereNot('state', 'cold'));
  if (sandboxes > 0) held.push(`${sandboxes} retained sandbox(es)`);
  const jobs = await count(trx('agent_jobs').where({ host_id: hostId }).whereNull('deleted_at'));
  if (jobs > 0) held.push(`${jobs} chat(s) placed on it`);
  return held;
}

/**
 * Asks to remove a host: removed at once when nothing holds it (audited `agent.host.removed`
 * `succeeded`), else draining from now (audited `requested`, the reason naming what holds it). A
 * second request while draining changes nothing and writes nothing (`alreadyRequested`).
 */
export async function requestHostRemoval(db: Db, hostId: string, by: AuditBy): Promise<RemovalStep> {
  return db.transaction(async (trx) => {
    const row = await lockHost(trx, hostId);
    if (!row) return { kind: 'not_found' };
    const held = await allocationsOf(trx, hostId);
    if (row.removal_requested_at !== null) {
      return { kind: 'draining', requestedAt: row.removal_requested_at.toISOString(), held, alreadyRequested: true };
    }
    if (held.length === 0) {
      const tombstone = await deleteOrTombstone(trx, hostId);
      await recordAudit(trx, { ...by, ...auditOf(hostId), action: 'agent.host.removed', outcome: 'succeeded', details: { tombstone, drained: false } });
      await releaseAllocationsOfRemovedHost(trx, hostId, by);
      return { kind: 'removed', tombstone };
    }
    const [updated] = await trx('agent_hosts').where({ host_id: hostId })
      .update({ removal_requested_at: trx.fn.now(), removal_requested_by: JSON.stringify({ actor: by.actor, actorIp: by.actorIp ?? null }) })
      .returning<Array<{ removal_requested_at: Date }>>('removal_requested_at');
    await recordAudit(trx, {
      ...by, ...auditOf(hostId), action: 'agent.host.removed', outcome: 'requested',
      reason: `Host ${hostId} still has ${held.join(', ')}; it drains and is removed once nothing holds it`, details: { held },
    });
    await noteAllocationsDraining(trx, hostId, held, by);
    return { kind: 'draining', requestedAt: updated!.removal_requested_at.toISOString(), held, alreadyRequested: false };
  });
}

/**
 * The drain's check: removes the host when its removal is still requested and nothing holds it
 * (audited `agent.host.removed` `succeeded` by whoever requested it); `draining` with what still
 * holds it; `not_requested` when the request was cancelled (or the host re-enrolled).
 */
export async function finishHostRemoval(db: Db, hostId: string): Promise<RemovalStep> {
  return db.transaction(async (trx) => {
    const row = await lockHost(trx, hostId);
    if (!row) return { kind: 'not_found' };
    if (row.removal_requested_at === null) return { kind: 'not_requested' };
    const held = await allocationsOf(trx, hostId);
    if (held.length > 0) return { kind: 'draining', requestedAt: row.removal_requested_at.toISOString(), held, alreadyRequested: true };
    const requestedAt = row.removal_requested_at.toISOString();
    const tombstone = await deleteOrTombstone(trx, hostId);
    const by: AuditBy = row.removal_requested_by ?? { actor: { type: 'system', name: 'host-workflow' } };
    await recordAudit(trx, { ...by, ...auditOf(hostId), action: 'agent.host.removed', outcome: 'succeeded', details: { tombstone, drained: true, requested_at: requestedAt } });
    await releaseAllocationsOfRemovedHost(trx, hostId, by);
    return { kind: 'removed', tombstone };
  });
}

/** Takes back a pending removal (audited `agent.host.removal_cancelled`); `not_requested` when none is pending. */
export async function cancelHostRemoval(db: Db, hostId: string, by: AuditBy): Promise<RemovalStep> {
  return db.transaction(async (trx) => {
    const row = await lockHost(trx, hostId);
    if (!row) return { kind: 'not_found' };
    if (row.removal_requested_at === null) return { kind: 'not_requested' };
    await trx('agent_hosts').where({ host_id: hostId }).update({ removal_requested_at: null, removal_requested_by: null });
    await recordAudit(trx, {
      ...by, ...auditOf(hostId), action: 'agent.host.removal_cancelled', outcome: 'succeeded',
      details: { requested_at: row.removal_requested_at.toISOString() },
    });
    return { kind: 'not_requested' };
  });
}

/** Deletes the host's row, or tombstones it when history still names it; true for a tombstone. */
async function deleteOrTombstone(trx: Knex.Transaction, hostId: string): Promise<boolean> {
  try {
    await trx.transaction((savepoint) => savepoint('agent_hosts').where({ host_id: hostId }).del());
    return false;
  } catch (err) {
    if ((err as { code?: string }).code !== '23503') throw err;
  }
  await trx('agent_hosts').where({ host_id: hostId }).update({
    removed_at: trx.fn.now(),
    removal_requested_at: trx.raw('coalesce(removal_requested_at, now())'),
    removal_requested_by: null,
    credential_hash: hashSecret(generateSecret('ahc')),
    credential_prefix: 'removed',
  });
  return true;
}
