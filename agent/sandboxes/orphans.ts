/**
 * Orphan sandbox containers (docs/sandboxes.md "Reconciler"): a container labelled for a host that
 * is no live group's recorded container. Each is recorded in `agent_sandbox_orphans` when first
 * reported (log `agent_sandbox_orphan_found`), kept for the grace period (`AGENT_ORPHAN_GRACE_SECONDS`),
 * then named in the report's answer for the host to remove (audit `agent.sandbox.orphan_remove`,
 * `requested`); the first report without it closes the record (`removed_at`; audit `succeeded`
 * when the removal was ordered). Runs inside the reconciler's transaction.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../lib/logger';
import { recordAudit, type AuditActor } from '../audit/audit-log';

/** The system actor of the inventory reconciler in the audit log. */
export const SANDBOX_RECONCILER: AuditActor = { type: 'system', name: 'sandbox-reconciler' };

export type OrphanReason = 'no_group' | 'group_deleted' | 'other_host' | 'other_container';

export interface OrphanSighting {
  containerId: string;
  containerName: string;
  groupId: string | null;
  generation: string | null;
  reason: OrphanReason;
}

const REASON_WORDS: Record<OrphanReason, string> = {
  no_group: 'it names no sandbox group',
  group_deleted: 'its sandbox group is deleted',
  other_host: 'its sandbox group lives on another host',
  other_container: 'its sandbox group records another container',
};

interface OrphanRow {
  container_id: string;
  container_name: string;
  group_id: string | null;
  generation: string | null;
  reason: OrphanReason;
  first_seen_at: Date;
  removal_ordered_at: Date | null;
  inserted: boolean;
}

/**
 * Records each sighting (first seen now, or seen again) and returns the ids past the grace period:
 * the host removes those. The first order for a container writes its audit row.
 */
export async function recordOrphanSightings(
  trx: Knex.Transaction, input: { hostId: string; sightings: readonly OrphanSighting[]; now: Date; graceSeconds: number; log: Logger },
): Promise<string[]> {
  const { hostId, now, log } = input;
  const due: string[] = [];
  for (const s of input.sightings) {
    const result = await trx.raw<{ rows: OrphanRow[] }>(`
      insert into agent_sandbox_orphans (host_id, container_id, container_name, group_id, generation, reason, first_seen_at, last_seen_at)
      values (?, ?, ?, ?, ?, ?, ?, ?)
      on conflict (host_id, container_id) do update
        set last_seen_at = excluded.last_seen_at, container_name = excluded.container_name, reason = excluded.reason, removed_at = null
      returning container_id, container_name, group_id, generation, reason, first_seen_at, removal_ordered_at, (xmax = 0) as inserted`,
    [hostId, s.containerId, s.containerName, s.groupId, s.generation, s.reason, now, now]);
    const row = result.rows[0]!;
    const fields = { host_id: hostId, container_id: s.containerId, container_name: s.containerName, group_id: s.groupId, generation: s.generation, reason: s.reason };
    if (row.inserted) log.warn({ event: 'agent_sandbox_orphan_found', ...fields }, `orphan sandbox container found: ${REASON_WORDS[s.reason]}`);
    if (now.getTime() - row.first_seen_at.getTime() < input.graceSeconds * 1000) continue;
    due.push(s.containerId);
    if (row.removal_ordered_at !== null) continue;
    await trx('agent_sandbox_orphans').where({ host_id: hostId, container_id: s.containerId }).update({ removal_ordered_at: now });
    await recordAudit(trx, {
      actor: SANDBOX_RECONCILER, category: 'sandboxes', action: 'agent.sandbox.orphan_remove', outcome: 'requested',
      target: { type: 'container', id: s.containerId },
      reason: `Orphan sandbox container past its grace period of ${input.graceSeconds} s: ${REASON_WORDS[s.reason]}`,
      details: { ...fields, first_seen_at: row.first_seen_at },
    });
    log.warn({ event: 'agent_sandbox_orphan_removal_ordered', ...fields, first_seen_at: row.first_seen_at.toISOString() }, 'orphan sandbox container removal ordered');
  }
  return due;
}

/**
 * Closes the open orphan records of `hostId` this report settles: a container no longer reported
 * is gone (`removed_at`; audited when its removal was ordered), and one that is now a live group's
 * container (its creation was recorded, or a turn of its group runs in it) was never an orphan
 * (record deleted).
 */
export async function settleOrphans(
  trx: Knex.Transaction, input: { hostId: string; reported: ReadonlySet<string>; live: ReadonlySet<string>; now: Date; log: Logger },
): Promise<void> {
  const { hostId, now, log } = input;
  const open = await trx('agent_sandbox_orphans').where({ host_id: hostId }).whereNull('removed_at')
    .select<Array<Omit<OrphanRow, 'inserted'>>>('container_id', 'container_name', 'group_id', 'generation', 'reason', 'first_seen_at', 'removal_ordered_at');
  for (const o of open) {
    const fields = { host_id: hostId, container_id: o.container_id, container_name: o.container_name, group_id: o.group_id, generation: o.generation, reason: o.reason };
    if (input.live.has(o.container_id)) {
      await trx('agent_sandbox_orphans').where({ host_id: hostId, container_id: o.container_id }).delete();
      log.info({ event: 'agent_sandbox_orphan_resolved', ...fields }, 'container recorded by its group: not an orphan');
      continue;
    }
    if (input.reported.has(o.container_id)) continue;
    await trx('agent_sandbox_orphans').where({ host_id: hostId, container_id: o.container_id }).update({ removed_at: now });
    if (o.removal_ordered_at !== null) {
      await recordAudit(trx, {
        actor: SANDBOX_RECONCILER, category: 'sandboxes', action: 'agent.sandbox.orphan_remove', outcome: 'succeeded',
        target: { type: 'container', id: o.container_id },
        reason: 'The host no longer reports the orphan container',
        details: { ...fields, first_seen_at: o.first_seen_at, removal_ordered_at: o.removal_ordered_at },
      });
    }
    log.info({ event: 'agent_sandbox_orphan_removed', ...fields, ordered: o.removal_ordered_at !== null }, 'orphan sandbox container gone');
  }
}
