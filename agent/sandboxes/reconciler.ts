/**
 * The inventory reconciler (docs/sandboxes.md "Reconciler"): compares one host's
 * container report with its `agent_sandboxes` rows, both ways, in one transaction with those rows
 * locked `FOR UPDATE` (group id order), so it never races an operator action or a turn's admission,
 * which lock the same rows.
 *
 * - A reported container that is a live group's recorded container (id, group and generation
 *   labels) is **observed**: latest reading, per-day running time, and a hidden group (stale entry
 *   or removed while stopped) shown again when it is running: a running sandbox is never hidden.
 * - Any other reported container is an **orphan** (orphans.ts), removed after the grace period,
 *   unless a turn of the group it names runs now with that generation: that is a container being
 *   created (`prepareSandbox` runs before `recordSandbox` records its id), never an orphan.
 * - A group `running`, `stopped` or `stop_pending` with a recorded container the report lacks is
 *   marked **dead** (not while an action is pending; not when the row changed within
 *   {@link VANISH_SETTLE_SECONDS}, since the listing may predate a container recorded meanwhile).
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import type { ValidRequestOf } from '../../lib/contracts/endpoint';
import type { hostInventory } from '../../lib/contracts/host-api';
import type { Logger } from '../../lib/logger';
import type { SandboxAction, SandboxState } from '../../workflows/definitions/sandbox-group';
import { recordAudit } from '../audit/audit-log';
import { recordOrphanSightings, SANDBOX_RECONCILER, settleOrphans, type OrphanSighting } from './orphans';
import { runningSecondsByDay } from './usage-accumulation';

export type InventoryReport = ValidRequestOf<typeof hostInventory>;
type Reported = InventoryReport['containers'][number];

/** A row changed this recently is not marked dead on this report (the listing may be older than the change). */
export const VANISH_SETTLE_SECONDS = 60;

/** Rows whose recorded container must be in every report of their host. */
const WATCHED_STATES: readonly SandboxState[] = ['running', 'stopped', 'stop_pending'];

interface GroupRow {
  group_id: string;
  container_id: string | null;
  generation: number;
  state: SandboxState;
  pending_action: SandboxAction | null;
  hidden_reason: 'host_stale' | 'stopped' | null;
  observed_at: Date | null;
  observed_state: string | null;
  updated_at: Date;
}

export interface ReconcileResult {
  /** Orphan container ids past their grace period: the host removes exactly these. */
  remove: string[];
  observed: number;
  orphans: number;
  /** Groups marked `dead` by this report. */
  markedDead: string[];
}

export interface ReconcileInput {
  hostId: string;
  report: InventoryReport;
  graceSeconds: number;
  log: Logger;
}

export async function reconcileHostInventory(db: Db, input: ReconcileInput): Promise<ReconcileResult> {
  const { hostId, log } = input;
  return db.transaction(async (trx) => {
    const now = ((await trx.raw<{ rows: Array<{ now: Date }> }>('select now() as now')).rows[0]!).now;
    const rows = await trx('agent_sandboxes').where({ host_id: hostId }).orderBy('group_id').forUpdate()
      .select<GroupRow[]>('group_id', 'container_id', 'generation', 'state', 'pending_action', 'hidden_reason', 'observed_at', 'observed_state', 'updated_at');
    const byGroup = new Map(rows.map((r) => [r.group_id, r]));
    const liveByContainer = new Map(rows.filter((r) => r.state !== 'deleted' && r.container_id !== null).map((r) => [r.container_id!, r]));
    const reported = new Set(input.report.containers.map((c) => c.container_id));
    const busy = await groupsWithRunningTurns(trx, rows.map((r) => r.group_id));
    const owners = await groupOwners(trx, rows.map((r) => r.group_id));

    const live = new Set<string>();
    const sightings: OrphanSighting[] = [];
    let observed = 0;
    for (const c of input.report.containers) {
      const row = liveByContainer.get(c.container_id);
      if (row) {
        live.add(c.container_id);
        if (row.group_id !== c.group_id || String(row.generation) !== c.generation) {
          // A live group's container id with other labels: never removed, never observed.
          log.warn({ event: 'agent_sandbox_container_labels_mismatch', host_id: hostId, group_id: row.group_id, container_id: c.container_id, labels: { group: c.group_id, generation: c.generation } }, 'a recorded sandbox container carries other labels');
          continue;
        }
        await observe(trx, { row, c, now, ownerId: owners.get(row.group_id), log, hostId });
        observed += 1;
        continue;
      }
      const mine = c.group_id === null ? undefined : byGroup.get(c.group_id);
      if (mine && mine.state !== 'deleted' && String(mine.generation) === c.generation && busy.has(mine.group_id)) {
        live.add(c.container_id); // being created for a running turn
        continue;
      }
      sightings.push({ containerId: c.container_id, containerName: c.name, groupId: c.group_id, generation: c.generation, reason: await orphanReason(trx, c, mine) });
    }

    const due = await recordOrphanSightings(trx, { hostId, sightings, now, graceSeconds: input.graceSeconds, log });
    await settleOrphans(trx, { hostId, reported, live, now, log });
    const markedDead = await markVanished(trx, { rows, reported, now, log, hostId });
    return { remove: await exceptLiveContainers(trx, due), observed, orphans: sightings.length, markedDead };
  });
}

/** Why a reported container that is no live container of this host is an orphan. */
async function orphanReason(trx: Knex.Transaction, c: Reported, mine: GroupRow | undefined): Promise<OrphanSighting['reason']> {
  if (mine) return mine.state === 'deleted' ? 'group_deleted' : 'other_container';
  if (c.group_id === null) return 'no_group';
  const elsewhere = await trx('agent_sandboxes').where({ group_id: c.group_id }).first<{ state: SandboxState } | undefined>('state');
  if (!elsewhere) return 'no_group';
  return elsewhere.state === 'deleted' ? 'group_deleted' : 'other_host';
}

/** The last safety check: never order the removal of any live group's recorded container (any host). */
async function exceptLiveContainers(trx: Knex.Transaction, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const recorded = await trx('agent_sandboxes').whereIn('container_id', ids).whereNot('state', 'deleted').pluck<string[]>('container_id');
  return ids.filter((id) => !recorded.includes(id));
}

/** Groups (among `groupIds`) with a running attempt on any of their chats. */
async function groupsWithRunningTurns(trx: Knex.Transaction, groupIds: string[]): Promise<Set<string>> {
  if (groupIds.length === 0) return new Set();
  const rows = await trx('agent_sandbox_members as m').join('agent_attempts as a', 'a.job_id', 'm.job_id')
    .whereIn('m.group_id', groupIds).where('a.state', 'running').distinct<Array<{ group_id: string }>>('m.group_id');
  return new Set(rows.map((r) => r.group_id));
}

/** The owner of each group's first chat (usage is counted for them). */
async function groupOwners(trx: Knex.Transaction, groupIds: string[]): Promise<Map<string, number>> {
  if (groupIds.length === 0) return new Map();
  const rows = await trx('agent_sandbox_members as m').join('agent_jobs as j', 'j.job_id', 'm.job_id').whereIn('m.group_id', groupIds)
    .orderBy([{ column: 'm.group_id' }, { column: 'm.created_at' }, { column: 'm.job_id' }])
    .select<Array<{ group_id: string; owner_id: string }>>('m.group_id', 'j.owner_id');
  const owners = new Map<string, number>();
  for (const r of rows) if (!owners.has(r.group_id)) owners.set(r.group_id, Number(r.owner_id));
  return owners;
}

/** Records the reading, adds running time since the previous running reading, and shows a hidden running group again. */
async function observe(
  trx: Knex.Transaction, input: { row: GroupRow; c: Reported; now: Date; ownerId: number | undefined; log: Logger; hostId: string },
): Promise<void> {
  const { row, c, now } = input;
  if (c.state === 'running' && row.observed_state === 'running' && row.observed_at !== null && input.ownerId !== undefined) {
    for (const share of runningSecondsByDay(row.observed_at, now)) {
      await trx.raw(`
        insert into agent_sandbox_usage_daily (group_id, day, owner_id, running_seconds) values (?, ?, ?, ?)
        on conflict (group_id, day) do update set running_seconds = least(86400, agent_sandbox_usage_daily.running_seconds + excluded.running_seconds)`,
      [row.group_id, share.day, input.ownerId, share.seconds]);
    }
  }
  // Either reason for hiding no longer holds once the recorded container runs (docs/sandboxes.md "Inventory visibility").
  const reappears = c.state === 'running' && row.hidden_reason !== null;
  await trx('agent_sandboxes').where({ group_id: row.group_id }).update({
    observed_at: now, observed_state: c.state, observed_cpu_percent: c.cpu_percent, observed_memory_bytes: c.memory_bytes,
    observed_disk_bytes: c.disk_bytes ?? trx.raw('observed_disk_bytes'),
    ...(reappears ? { hidden_at: null, hidden_reason: null, updated_at: now } : {}),
  });
  if (!reappears) return;
  await recordAudit(trx, {
    actor: SANDBOX_RECONCILER, category: 'sandboxes', action: 'agent.sandbox.restore_inventory', outcome: 'succeeded',
    target: { type: 'sandbox', id: row.group_id }, reason: 'Its host reported the recorded container running again',
    details: { generation: row.generation, container_id: row.container_id, state: row.state, hidden_reason: row.hidden_reason },
  });
  input.log.info({ event: 'agent_sandbox_reappeared', host_id: input.hostId, group_id: row.group_id }, 'hidden sandbox observed running: shown again');
}

/** Marks `dead` each watched group whose recorded container the report lacks. */
async function markVanished(
  trx: Knex.Transaction, input: { rows: GroupRow[]; reported: ReadonlySet<string>; now: Date; log: Logger; hostId: string },
): Promise<string[]> {
  const settled = input.now.getTime() - VANISH_SETTLE_SECONDS * 1000;
  const vanished = input.rows.filter((r) => WATCHED_STATES.includes(r.state) && r.pending_action === null && r.container_id !== null
    && !input.reported.has(r.container_id) && r.updated_at.getTime() <= settled);
  for (const r of vanished) {
    await trx('agent_sandboxes').where({ group_id: r.group_id })
      .update({ state: 'dead', observed_at: input.now, observed_state: null, observed_cpu_percent: null, observed_memory_bytes: null, updated_at: input.now });
    await recordAudit(trx, {
      actor: SANDBOX_RECONCILER, category: 'sandboxes', action: 'agent.sandbox.mark_dead', outcome: 'succeeded',
      target: { type: 'sandbox', id: r.group_id }, reason: 'Its host no longer reports the recorded container',
      details: { container_id: r.container_id, generation: r.generation, previous_state: r.state, state: 'dead' },
    });
    input.log.warn({ event: 'agent_sandbox_container_vanished', host_id: input.hostId, group_id: r.group_id, container_id: r.container_id, previous_state: r.state }, 'recorded sandbox container gone: group marked dead');
  }
  return vanished.map((r) => r.group_id);
}
