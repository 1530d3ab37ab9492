/**
 * Operator reads and slot changes on execution hosts (docs/agent-hosts.md "Slots"): list hosts with
 * their slot state, and save a host's slots (lowering holds at once, raising once the runner
 * confirms). The host workflow (`host:<hostId>`, workflows/host.ts) calls {@link saveHostSlots}
 * through its activity; removal is agent/hosts/host-removal.ts. Each change writes its audit row
 * (docs/agent-audit.md) in the transaction that makes it.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import { HOST_ID } from './host-registry';
import { runningCounts } from './placement';
import { hostView, type HostRow, type HostView, type HostViewContext } from './host-view';

const HOST_COLUMNS = [
  'host_id', 'slots_saved', 'slots_total', 'runtime', 'runner_version', 'capabilities', 'preflight', 'enrolled_at',
  'last_heartbeat_at', 'removal_requested_at',
];

/** Enrolled (not removed) hosts, with the heartbeat age measured by the database clock. */
function hostRows(db: Knex): Knex.QueryBuilder {
  return db('agent_hosts')
    .select(HOST_COLUMNS)
    .select(db.raw('extract(epoch from (now() - last_heartbeat_at))::float8 as heartbeat_age_seconds'))
    .whereNull('removed_at');
}

async function viewsOf(db: Knex, rows: HostRow[], context: HostViewContext): Promise<HostView[]> {
  const running = await runningCounts(db, rows.map((r) => r.host_id));
  return rows.map((row) => hostView(row, running.get(row.host_id) ?? 0, context));
}

/** Every enrolled host, by host id. */
export async function listHosts(db: Db, context: HostViewContext): Promise<HostView[]> {
  const rows = (await hostRows(db).orderBy('host_id')) as HostRow[];
  return viewsOf(db, rows, context);
}

/** One enrolled host, or 404 `Host not found`. */
export async function getHost(db: Db, hostId: string, context: HostViewContext): Promise<HostView> {
  const row = HOST_ID.test(hostId) ? ((await hostRows(db).where({ host_id: hostId }).first()) as HostRow | undefined) : undefined;
  if (!row) throw new AppError('not_found', `Host not found: ${hostId}`);
  const [view] = await viewsOf(db, [row], context);
  return view!;
}

/**
 * Saves a host's slots (2..128, or null for the host's environment default); returns what it
 * replaced. Admission uses the lower of this and the reported total, so a lowering holds at once.
 * 404 for an unknown or removed host; 409 while its removal is pending (cancel it first).
 * Audited as `agent.host.slots_changed` by `by`, in the same transaction.
 */
export async function saveHostSlots(db: Db, hostId: string, slots: number | null, by: AuditBy): Promise<{ previous: number | null }> {
  return db.transaction(async (trx) => {
    const row = HOST_ID.test(hostId)
      ? await trx('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').forUpdate()
        .first<{ slots_saved: number | null; removal_requested_at: Date | null } | undefined>('slots_saved', 'removal_requested_at')
      : undefined;
    if (!row) throw new AppError('not_found', `Host not found: ${hostId}`);
    if (row.removal_requested_at !== null) {
      throw new AppError('conflict', `Host ${hostId} is being removed (requested at ${row.removal_requested_at.toISOString()}); cancel the removal before changing its slots`);
    }
    await trx('agent_hosts').where({ host_id: hostId }).update({ slots_saved: slots });
    await recordAudit(trx, {
      ...by, category: 'hosts', action: 'agent.host.slots_changed', target: { type: 'host', id: hostId }, outcome: 'succeeded',
      details: { slots_previous: row.slots_saved, slots_saved: slots },
    });
    return { previous: row.slots_saved };
  });
}
