/**
 * What the host workflow (`host:<hostId>`) reads of its host in PostgreSQL, the source of truth
 * (docs/agent-hosts.md "The host workflow"): heartbeat age by the database clock, saved and
 * reported slots, runner version, a pending removal. Also the audit rows the workflow writes on its
 * own: a slot change confirmed by the runner, and refusals of an operator action that never reached
 * an activity (the Update's validator).
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import type { HostAction, HostObservation } from '../../workflows/definitions/host';
import { HOST_ID } from './host-registry';

/** One read of the host row (not removed). */
export async function observeHost(db: Db, hostId: string): Promise<HostObservation> {
  const row = HOST_ID.test(hostId)
    ? await db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at')
      .first<{ age: number | null; slots_saved: number | null; slots_total: number | null; runner_version: string | null; removal_requested_at: Date | null } | undefined>(
        db.raw('extract(epoch from (now() - last_heartbeat_at))::float8 as age'), 'slots_saved', 'slots_total', 'runner_version', 'removal_requested_at',
      )
    : undefined;
  if (!row) return { found: false };
  return {
    found: true,
    heartbeatAgeSeconds: row.age,
    slotsSaved: row.slots_saved,
    slotsTotal: row.slots_total,
    runnerVersion: row.runner_version,
    removalRequestedAt: row.removal_requested_at?.toISOString() ?? null,
  };
}

/** The runner confirmed a slot change by reporting it: `agent.host.slots_applied`, by the system actor `host-workflow`. */
export async function noteSlotsApplied(db: Db, input: { hostId: string; slots: number | null; reported: number }): Promise<void> {
  await recordAudit(db, {
    actor: { type: 'system', name: 'host-workflow' }, category: 'hosts', action: 'agent.host.slots_applied',
    target: { type: 'host', id: input.hostId }, outcome: 'succeeded', details: { slots_saved: input.slots, slots_total: input.reported },
  });
}

const REFUSED_ACTION: Record<HostAction, `agent.host.${string}`> = {
  change_slots: 'agent.host.slots_changed',
  remove: 'agent.host.removed',
  cancel_removal: 'agent.host.removal_cancelled',
};

/** An operator action refused (409): one `refused` audit row with the reason. */
export async function noteHostActionRefused(db: Knex | Knex.Transaction, input: { hostId: string; action: HostAction; by: AuditBy; reason: string }): Promise<void> {
  await recordAudit(db, {
    ...input.by, category: 'hosts', action: REFUSED_ACTION[input.action], target: { type: 'host', id: input.hostId }, outcome: 'refused', reason: input.reason,
  });
}
