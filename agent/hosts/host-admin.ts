/**
 * Operator actions on execution hosts (spec 3.5, 4.4): list hosts with their slot state, save a
 * host's slots (lowering holds at once, raising once the runner confirms), and guarded removal.
 * Each change writes its audit row (docs/agent-audit.md) in the transaction that makes it; a
 * refused removal writes a `refused` row of its own.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret } from '../../lib/crypto';
import { AppError, isAppError } from '../../lib/errors';
import { recordAudit, type AuditBy } from '../audit/audit-log';
import { HOST_ID } from './host-registry';
import { runningCounts } from './placement';
import { hostView, type HostRow, type HostView, type HostViewContext } from './host-view';

const HOST_COLUMNS = [
  'host_id', 'slots_saved', 'slots_total', 'runtime', 'runner_version', 'capabilities', 'enrolled_at',
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
 * Audited as `agent.host.slots_changed` by `by`, in the same transaction.
 */
export async function saveHostSlots(db: Db, hostId: string, slots: number | null, by: AuditBy): Promise<{ previous: number | null }> {
  return db.transaction(async (trx) => {
    const row = HOST_ID.test(hostId)
      ? await trx('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').forUpdate().first<{ slots_saved: number | null } | undefined>('slots_saved')
      : undefined;
    if (!row) throw new AppError('not_found', `Host not found: ${hostId}`);
    await trx('agent_hosts').where({ host_id: hostId }).update({ slots_saved: slots });
    await recordAudit(trx, {
      ...by, category: 'hosts', action: 'agent.host.slots_changed', target: { type: 'host', id: hostId }, outcome: 'succeeded',
      details: { slots_previous: row.slots_saved, slots_saved: slots },
    });
    return { previous: row.slots_saved };
  });
}

/** What still holds a host: running attempts, retained (not cold) sandboxes, chats placed on it. */
async function allocationsOf(trx: Knex.Transaction, hostId: string): Promise<string[]> {
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
 * Removes a host without allocations: 409 naming what still holds it, 404 when unknown. The row
 * is deleted, or, when history still names the host (finished attempts, cold sandboxes, deleted
 * chats), kept as a tombstone (`removed_at`) with an unusable credential. Either way the host's
 * credential stops working; enrolling the host again brings it back. Audited as
 * `agent.host.removed` by `by`: `succeeded` in the removing transaction, `refused` (with the
 * 409's reason) on its own when something still holds the host.
 */
export async function removeHost(db: Db, hostId: string, by: AuditBy): Promise<{ tombstone: boolean }> {
  const audit = { ...by, category: 'hosts', action: 'agent.host.removed', target: { type: 'host', id: hostId } } as const;
  try {
    return await db.transaction(async (trx) => {
      const row: unknown = HOST_ID.test(hostId)
        ? await trx('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').forUpdate().first('host_id')
        : undefined;
      if (!row) throw new AppError('not_found', `Host not found: ${hostId}`);
      const held = await allocationsOf(trx, hostId);
      if (held.length > 0) {
        throw new AppError('conflict', `Host ${hostId} still has ${held.join(', ')}; drain or move them before removing the host`);
      }
      const tombstone = await deleteOrTombstone(trx, hostId);
      await recordAudit(trx, { ...audit, outcome: 'succeeded', details: { tombstone } });
      return { tombstone };
    });
  } catch (err) {
    if (isAppError(err) && err.code === 'conflict') await recordAudit(db, { ...audit, outcome: 'refused', reason: err.message });
    throw err;
  }
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
    credential_hash: hashSecret(generateSecret('ahc')),
    credential_prefix: 'removed',
  });
  return true;
}
