/**
 * Operator actions on a sandbox group (docs/sandboxes.md "Lifecycle"): the conditions
 * each action needs, checked in PostgreSQL with the group row locked (so a turn's admission, which
 * locks the same row, either sees the pending state and waits or is seen as busy here), and the
 * state transitions the sandbox group workflow drives. The workflow's Update validators refuse
 * what its own state already rules out (another action in progress); everything that depends on
 * PostgreSQL is decided here, in one transaction, and a refusal carries the reason the API returns.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import {
  confirmsStopped, describeObservation,
  type ContainerObservation, type ContainerRemoval, type SandboxAction, type SandboxActionRequest, type SandboxState,
} from '../../workflows/definitions/sandbox-group';
import { noteSandboxActionOutcome } from './action-outcome';
import { receiptOf } from './sandbox-archives';

interface GroupRow {
  group_id: string;
  host_id: string;
  container_name: string;
  container_id: string | null;
  generation: number;
  state: SandboxState;
  pending_action: SandboxAction | null;
  pending_from_state: SandboxState | null;
  hidden_at: Date | null;
  last_activity_ms: string;
  host_stale: boolean;
}

/** What the host must do for a claimed action (stop: stop then observe; delete: remove if not running). */
export interface ClaimedAction {
  kind: 'claimed';
  state: SandboxState;
  /** The group's host now (a restored group may have moved since the workflow started; absent in claims recorded before). */
  hostId?: string;
  /** The state the group was in when claimed (absent in claims recorded before). */
  fromState?: SandboxState;
  containerName: string;
  containerId: string;
  generation: number;
}

export type Claim =
  | ClaimedAction
  /** Done in PostgreSQL alone (inventory actions). */
  | { kind: 'done'; state: SandboxState; hidden: boolean }
  | { kind: 'refused'; reason: string };

/** Pending states: new turns wait while a group is in one (agent/jobs/turn-admission.ts). */
export const PENDING_STATES: readonly SandboxState[] = ['stop_pending', 'deleting', 'archiving'];

async function lockGroup(trx: Knex.Transaction, groupId: string, staleSeconds: number): Promise<GroupRow | undefined> {
  return trx('agent_sandboxes as s')
    .join('agent_hosts as h', 'h.host_id', 's.host_id')
    .where('s.group_id', groupId)
    .forUpdate('s')
    .first<GroupRow | undefined>(
      's.group_id', 's.host_id', 's.container_name', 's.container_id', 's.generation', 's.state', 's.pending_action',
      's.pending_from_state', 's.hidden_at',
      trx.raw(`(extract(epoch from date_trunc('milliseconds', s.last_activity_at)) * 1000)::bigint::text as last_activity_ms`),
      trx.raw(`(h.last_heartbeat_at is null or h.last_heartbeat_at <= now() - make_interval(secs => ?)) as host_stale`, [staleSeconds]),
    );
}

/** Running attempts and queued turns of the group's chats. */
async function activity(trx: Knex.Transaction, groupId: string): Promise<{ running: number; queued: number }> {
  const members = trx('agent_sandbox_members').select('job_id').where({ group_id: groupId });
  const [running] = await trx('agent_attempts').whereIn('job_id', members).where({ state: 'running' }).count<Array<{ count: string }>>({ count: '*' });
  const [queued] = await trx('agent_turns').whereIn('job_id', members).where({ state: 'queued' }).count<Array<{ count: string }>>({ count: '*' });
  return { running: Number(running!.count), queued: Number(queued!.count) };
}

/** The reviewed container id, generation and (stop) last activity still match the group. */
function reviewMismatch(row: GroupRow, request: SandboxActionRequest): string | undefined {
  if (row.generation !== request.generation) return `The sandbox is at generation ${row.generation}, not the reviewed generation ${request.generation}`;
  if (request.containerId !== undefined && row.container_id !== request.containerId) {
    return `The sandbox's container is ${row.container_id ?? 'not recorded'}, not the reviewed container ${request.containerId}`;
  }
  if (request.lastActivityAt !== undefined && String(Date.parse(request.lastActivityAt)) !== row.last_activity_ms) {
    return `The sandbox was active at ${new Date(Number(row.last_activity_ms)).toISOString()}, after the reviewed last activity ${request.lastActivityAt}`;
  }
  return undefined;
}

function busyReason(active: { running: number; queued: number }, countQueued: boolean): string | undefined {
  if (active.running > 0) return 'A turn is running on this sandbox';
  if (countQueued && active.queued > 0) return 'A turn is queued on this sandbox';
  return undefined;
}

/**
 * Checks `request`'s condition on the locked group row and, when it holds, moves the group to the
 * action's pending state (stop, delete, force delete) or applies it (inventory actions).
 */
export interface ClaimInput {
  groupId: string;
  request: SandboxActionRequest;
  staleSeconds: number;
  /** Whether an object store takes archives (the control worker has one). */
  archivesConfigured: boolean;
}

export async function claimSandboxAction(db: Db, input: ClaimInput): Promise<Claim> {
  const { request } = input;
  return db.transaction(async (trx) => {
    const claim = await decideClaim(trx, input);
    // The outcome commits with the change (or the refusal) it describes.
    if (claim.kind === 'refused') await noteSandboxActionOutcome(trx, { groupId: input.groupId, request, outcome: 'refused', reason: claim.reason });
    if (claim.kind === 'done') await noteSandboxActionOutcome(trx, { groupId: input.groupId, request, outcome: 'completed', state: claim.state });
    return claim;
  });
}

/** The claim's decision on the locked group row (and its pending state when it holds). */
async function decideClaim(trx: Knex.Transaction, input: ClaimInput): Promise<Claim> {
  const { request } = input;
  const row = await lockGroup(trx, input.groupId, input.staleSeconds);
  if (!row) return { kind: 'refused', reason: `Sandbox group ${input.groupId} does not exist` };
  if (row.pending_action !== null) return { kind: 'refused', reason: `Another action (${row.pending_action}) is in progress on this sandbox` };
  const mismatch = reviewMismatch(row, request);
  if (mismatch) return { kind: 'refused', reason: mismatch };
  switch (request.action) {
    case 'stop': return claimHostWork(trx, row, 'stop', ['running'], 'stop_pending', busyReason(await activity(trx, row.group_id), false));
    case 'delete': return claimHostWork(trx, row, 'delete', ['stopped', 'dead'], 'deleting', busyReason(await activity(trx, row.group_id), true));
    case 'force_delete': return claimHostWork(trx, row, 'force_delete', ['running'], 'deleting', busyReason(await activity(trx, row.group_id), true));
    case 'archive_delete':
      if (!input.archivesConfigured) return { kind: 'refused', reason: 'No object store is configured for sandbox archives' };
      return claimHostWork(trx, row, 'archive_delete', ['stopped', 'dead'], 'archiving', busyReason(await activity(trx, row.group_id), true));
    case 'remove_from_inventory': return hide(trx, row);
    case 'restore_to_inventory': return unhide(trx, row);
  }
}

const STATE_WORDS: Partial<Record<SandboxAction, string>> = {
  stop: 'running (idle)', delete: 'stopped or dead', force_delete: 'recorded running', archive_delete: 'stopped or dead',
};

async function claimHostWork(
  trx: Knex.Transaction, row: GroupRow, action: SandboxAction, from: readonly SandboxState[], to: SandboxState, busy: string | undefined,
): Promise<Claim> {
  if (!from.includes(row.state)) return { kind: 'refused', reason: `The sandbox is ${row.state}; this action needs it ${STATE_WORDS[action]}` };
  if (busy) return { kind: 'refused', reason: busy };
  if (!row.container_id) return { kind: 'refused', reason: 'The sandbox has no recorded container' };
  await trx('agent_sandboxes').where({ group_id: row.group_id })
    .update({ state: to, pending_action: action, pending_from_state: row.state, updated_at: trx.fn.now() });
  return { kind: 'claimed', state: to, hostId: row.host_id, fromState: row.state, containerName: row.container_name, containerId: row.container_id, generation: row.generation };
}

async function hide(trx: Knex.Transaction, row: GroupRow): Promise<Claim> {
  if (row.hidden_at !== null) return { kind: 'refused', reason: 'The sandbox is already hidden from the inventory' };
  let reason: 'stopped' | 'host_stale';
  if (row.state === 'stopped') {
    reason = 'stopped';
  } else if (row.host_stale) {
    const busy = busyReason(await activity(trx, row.group_id), true);
    if (busy) return { kind: 'refused', reason: `${busy}; a stale entry is removed only when nothing is active` };
    reason = 'host_stale';
  } else {
    return { kind: 'refused', reason: `The sandbox is ${row.state} on a host that is not stale; only a stopped sandbox or the entry of a stale host can be removed from the inventory` };
  }
  await trx('agent_sandboxes').where({ group_id: row.group_id }).update({ hidden_at: trx.fn.now(), hidden_reason: reason, updated_at: trx.fn.now() });
  return { kind: 'done', state: row.state, hidden: true };
}

async function unhide(trx: Knex.Transaction, row: GroupRow): Promise<Claim> {
  if (row.hidden_at === null) return { kind: 'refused', reason: 'The sandbox is not hidden from the inventory' };
  await trx('agent_sandboxes').where({ group_id: row.group_id }).update({ hidden_at: null, hidden_reason: null, updated_at: trx.fn.now() });
  return { kind: 'done', state: row.state, hidden: false };
}

/** Returns a claimed action's group to the state it came from (the host did not confirm). */
export async function releaseSandboxAction(db: Db, input: { groupId: string; request: SandboxActionRequest; reason: string }): Promise<SandboxState | undefined> {
  const state = await db.transaction(async (trx) => {
    const row = await trx('agent_sandboxes').where({ group_id: input.groupId, pending_action: input.request.action }).forUpdate()
      .first<{ pending_from_state: SandboxState } | undefined>('pending_from_state');
    if (!row) return undefined;
    await trx('agent_sandboxes').where({ group_id: input.groupId })
      .update({ state: row.pending_from_state, pending_action: null, pending_from_state: null, updated_at: trx.fn.now() });
    await noteSandboxActionOutcome(trx, { groupId: input.groupId, request: input.request, outcome: 'refused', state: row.pending_from_state, reason: input.reason });
    return row.pending_from_state;
  });
  return state;
}

export interface FinishInput {
  groupId: string;
  request: SandboxActionRequest;
  /** Stop: what the host saw after stopping. */
  observation?: ContainerObservation;
  /** Delete, force delete: what the removal did. */
  removal?: ContainerRemoval;
  /** The host work failed (after retries): the group returns to its previous state. */
  error?: string;
}

/**
 * Ends a claimed action with what the host reported: stop → `stopped` (or `dead`) only when the
 * observation confirms the exact container; delete → `deleted`, and native resume lost, only after
 * the host confirmed the removal. Anything else returns the group to the state it came from.
 */
export async function finishSandboxAction(db: Db, input: FinishInput): Promise<{ state: SandboxState; outcome: 'completed' | 'failed'; reason?: string }> {
  type Result = { state: SandboxState; outcome: 'completed' | 'failed'; reason?: string; already?: true };
  const result = await db.transaction(async (trx): Promise<Result> => {
    const row = await trx('agent_sandboxes').where({ group_id: input.groupId, pending_action: input.request.action }).forUpdate()
      .first<{ pending_from_state: SandboxState; container_id: string; generation: number; state: SandboxState } | undefined>('pending_from_state', 'container_id', 'generation', 'state');
    if (!row) {
      const current = await trx('agent_sandboxes').where({ group_id: input.groupId }).first<{ state: SandboxState } | undefined>('state');
      return { state: current?.state ?? 'deleted', outcome: 'completed', already: true };
    }
    const done = (state: SandboxState, extra: Record<string, unknown> = {}) =>
      trx('agent_sandboxes').where({ group_id: input.groupId })
        .update({ state, pending_action: null, pending_from_state: null, updated_at: trx.fn.now(), ...extra });
    if (input.observation && confirmsStopped(input.observation, row.container_id, row.generation)) {
      const state: SandboxState = input.observation.condition === 'dead' ? 'dead' : 'stopped';
      await done(state);
      await noteSandboxActionOutcome(trx, { groupId: input.groupId, request: input.request, outcome: 'completed', state });
      return { state, outcome: 'completed' as const };
    }
    if (input.removal?.removed === true && input.request.action === 'archive_delete') {
      // The archive (with the members' homes) was committed before the removal: native sessions come back with it.
      if (!(await receiptOf(trx, input.groupId, row.generation))) throw new Error(`Group ${input.groupId} was removed for an archive without a committed receipt`);
      await done('cold', { container_id: null });
      await noteSandboxActionOutcome(trx, { groupId: input.groupId, request: input.request, outcome: 'completed', state: 'cold' });
      return { state: 'cold' as const, outcome: 'completed' as const };
    }
    if (input.removal?.removed === true) {
      await done('deleted', { native_resume_lost_at: trx.fn.now() });
      await noteSandboxActionOutcome(trx, { groupId: input.groupId, request: input.request, outcome: 'completed', state: 'deleted' });
      return { state: 'deleted' as const, outcome: 'completed' as const };
    }
    const seen = input.observation ?? (input.removal?.removed === false ? input.removal.observation : undefined);
    const reason = input.error ?? (seen ? `The host did not confirm: ${describeObservation(seen)}` : 'The host did not confirm');
    await done(row.pending_from_state);
    await noteSandboxActionOutcome(trx, { groupId: input.groupId, request: input.request, outcome: 'failed', state: row.pending_from_state, reason });
    return { state: row.pending_from_state, outcome: 'failed' as const, reason };
  });
  return { state: result.state, outcome: result.outcome, ...(result.reason ? { reason: result.reason } : {}) };
}
