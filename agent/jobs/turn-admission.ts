/**
 * Admission of a chat's next turn (docs/agent-control-plane.md, docs/agent-hosts.md "Slots"): in
 * one transaction, claim the turn (job row, then turn row locked), place it on a host with a free
 * slot (host rows locked), make sure the chat has its sandbox group there, and start its attempt.
 * Nothing is written unless the turn is admitted: a turn that must wait, was cancelled meanwhile or
 * is not next leaves every row as it was.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { placeTurn } from '../hosts/placement';
import { FORK_HELPER_VERSION, type ExecutionProfile } from '../../lib/execution-profiles';
import type { WaitReason } from './wait-reasons';
import { PENDING_STATES } from '../sandboxes/sandbox-actions';
import { latestReceipt } from '../sandboxes/sandbox-archives';
import { recordAudit, TURN_ADMISSION } from '../audit/audit-log';
import type { SandboxArchiveReceipt } from '../../workflows/definitions/sandbox-group';
import type { TurnLimits } from '../settings/host-settings';
import { newId } from './job-store';
import { claimNextTurn, startAttempt, type ActiveTurn, type ClaimedJob, type TurnState } from './turn-transitions';

/** The first member of a group runs as this UID; later members (forks) take the next free one. */
export const FIRST_MEMBER_UID = 10001;

export type AdmittedTurn = {
  kind: 'admitted';
  seq: number;
  turnId: string;
  attemptId: string;
  hostId: string;
  groupId: string;
  generation: number;
  uid: number;
  repo: string | null;
  baseRef: string | null;
  baseSha: string | null;
  /** The group was cold: the host restores this archive into the new generation's container first. */
  restore?: SandboxArchiveReceipt;
  /** The limits this turn runs under, recorded on its attempt (absent in histories from before host settings). */
  limits?: TurnLimits;
  /** The sandbox group's execution profile (absent in histories from before profiles: the host takes the safe one). */
  executionProfile?: ExecutionProfile;
};

export type Admission =
  | AdmittedTurn
  /** The turn is no longer queued (cancelled meanwhile) or not the chat's next: nothing to run. */
  | { kind: 'skipped'; state: TurnState | 'not_next' }
  /** No slot now: try again later. */
  | { kind: 'wait'; reason: WaitReason }
  | { kind: 'job_missing' }
  /** Another admission of this chat holds its row now (a host's claim): try again shortly. */
  | { kind: 'busy' }
  /** The chat's sandbox group record is gone: it cannot run here again. */
  | { kind: 'sandbox_missing'; message: string };

export interface AdmissionLimits {
  /** A host whose last heartbeat is older than this is offline (`AGENT_HOST_STALE_SECONDS`). */
  staleSeconds: number;
  /** `AGENT_HOST_SLOTS`. */
  defaultSlots: number;
  /** The host settings' limits now (docs/agent-admin.md "Host settings"): recorded on the attempt and returned. */
  turnLimits?: TurnLimits;
}

type Group = { groupId: string; generation: number; uid: number; restore?: SandboxArchiveReceipt };

/**
 * The chat's sandbox group on `hostId`, created (generation 1, first member) for a chat not yet placed.
 * A group with an operator action pending (stop, delete) makes the turn wait; a deleted one is missing.
 */
async function ensureGroup(trx: Knex.Transaction, job: ClaimedJob, hostId: string): Promise<Group | { missing: string } | { pending: string }> {
  if (job.group_id) {
    // Locked like an operator action locks it (agent/sandboxes/sandbox-actions.ts): a stop or delete
    // claimed first is seen here as pending, and an attempt started first is seen there as busy.
    const group = await trx('agent_sandboxes').where({ group_id: job.group_id }).forUpdate().first<{ generation: number; state: string }>('generation', 'state');
    const member = await trx('agent_sandbox_members').where({ job_id: job.job_id }).first<{ uid: number }>('uid');
    if (!group || !member) return { missing: `sandbox group ${job.group_id} of ${job.job_id} is missing` };
    if (group.state === 'deleted') return { missing: `The sandbox of this chat was deleted by an operator; its workspace is gone` };
    if (group.state === 'cold') return restoreGroup(trx, job.group_id, group.generation, member.uid, hostId);
    // Another member's turn is restoring the archive: this one waits for the container.
    if (group.state === 'restoring' || (PENDING_STATES as readonly string[]).includes(group.state)) return { pending: group.state };
    return { groupId: job.group_id, generation: group.generation, uid: member.uid };
  }
  const groupId = newId('grp');
  await trx('agent_sandboxes').insert({
    group_id: groupId, host_id: hostId, container_name: `sbx-${groupId}`, generation: 1, state: 'starting', execution_profile: job.execution_profile,
    fork_helper_version: FORK_HELPER_VERSION,
  });
  await trx('agent_sandbox_members').insert({ job_id: job.job_id, group_id: groupId, uid: FIRST_MEMBER_UID });
  await trx('agent_jobs').where({ job_id: job.job_id }).update({ group_id: groupId, host_id: hostId, updated_at: trx.fn.now() });
  return { groupId, generation: 1, uid: FIRST_MEMBER_UID };
}

/**
 * A cold group comes back (docs/sandboxes.md "Cold and restoring"): a new generation on the host the turn
 * was placed on, `restoring` until the host has restored and verified the archive and recorded
 * the new container (chat-activities `recordSandbox`), back to `cold` when the attempt fails.
 */
async function restoreGroup(trx: Knex.Transaction, groupId: string, generation: number, uid: number, hostId: string): Promise<Group | { missing: string }> {
  const receipt = await latestReceipt(trx, groupId);
  if (!receipt) return { missing: `The archive of this chat's sandbox is missing; its workspace cannot be restored` };
  const next = generation + 1;
  await trx('agent_sandboxes').where({ group_id: groupId })
    .update({ state: 'restoring', generation: next, host_id: hostId, container_id: null, updated_at: trx.fn.now() });
  await trx('agent_jobs').whereIn('job_id', trx('agent_sandbox_members').select('job_id').where({ group_id: groupId }))
    .update({ host_id: hostId, updated_at: trx.fn.now() });
  return { groupId, generation: next, uid, restore: receipt };
}

/**
 * Where and how the chat's turn may run: a cold group's turn may go to any host (the archive is
 * restored there); the profile is the group's once it exists (fixed at its creation), else the job's.
 */
async function groupPlacement(trx: Knex.Transaction, job: ClaimedJob): Promise<{ cold: boolean; profile: ExecutionProfile }> {
  if (!job.group_id) return { cold: false, profile: job.execution_profile };
  const row = await trx('agent_sandboxes').where({ group_id: job.group_id })
    .first<{ state: string; execution_profile: ExecutionProfile } | undefined>('state', 'execution_profile');
  return { cold: row?.state === 'cold', profile: row?.execution_profile ?? job.execution_profile };
}

/**
 * An admitted turn is the group's latest activity, and new work shows a hidden group again
 * (docs/sandboxes.md "Inventory visibility"): the operator hid a stopped sandbox or a stale host's
 * entry, and neither holds once a chat of it runs again. The row is locked (ensureGroup).
 */
async function noteNewWork(trx: Knex.Transaction, groupId: string, turnId: string): Promise<void> {
  const row = await trx('agent_sandboxes').where({ group_id: groupId })
    .first<{ hidden_reason: string | null; generation: number; state: string }>('hidden_reason', 'generation', 'state');
  const hidden = row?.hidden_reason ?? null;
  await trx('agent_sandboxes').where({ group_id: groupId })
    .update({ last_activity_at: trx.fn.now(), ...(hidden !== null ? { hidden_at: null, hidden_reason: null, updated_at: trx.fn.now() } : {}) });
  if (hidden === null) return;
  await recordAudit(trx, {
    actor: TURN_ADMISSION, category: 'sandboxes', action: 'agent.sandbox.restore_inventory', outcome: 'succeeded',
    target: { type: 'sandbox', id: groupId }, reason: 'A turn of one of its chats was admitted',
    details: { generation: row?.generation, state: row?.state, hidden_reason: hidden, turn_id: turnId },
  });
}

/** Who admits: the chat workflow run (`runId`, it dispatches the turn itself) or a host's claim (`claimHostId`: only that host). */
export type Admitter = { runId?: string; claimHostId?: undefined } | { claimHostId: string; runId?: undefined };

/**
 * Places and starts a claimed turn inside `trx` (the job and turn rows are locked by the claim).
 * Writes nothing unless it answers `admitted`. The attempt records the admission, and which
 * workflow run dispatches it (none yet for a host's claim: docs/agent-hosts.md "The claim queue").
 */
export async function admitClaimed(
  trx: Knex.Transaction, claim: { job: ClaimedJob; turn: ActiveTurn }, limits: AdmissionLimits, by: Admitter,
): Promise<Admission> {
  const { job, turn } = claim;
  const where = await groupPlacement(trx, job);
  const jobHostId = where.cold ? null : job.host_id;
  // A host claims only for itself: a chat retained elsewhere is not its to start.
  if (by.claimHostId !== undefined && jobHostId !== null && jobHostId !== by.claimHostId) return { kind: 'wait', reason: 'host_offline' };
  const placed = await placeTurn(trx, {
    jobHostId, staleSeconds: limits.staleSeconds, defaultSlots: limits.defaultSlots, profile: where.profile,
    ...(by.claimHostId !== undefined ? { onlyHostId: by.claimHostId } : {}),
    // A historical fork whose session is not made yet: the host's helper must cut it at the anchor.
    needsForkAtAnchor: job.forked_from_job_id !== null && job.fork_historical && job.fork_prepared_at === null,
  });
  if ('wait' in placed) return { kind: 'wait' as const, reason: placed.wait };
  const group = await ensureGroup(trx, job, placed.hostId);
  if ('missing' in group) return { kind: 'sandbox_missing' as const, message: group.missing };
  if ('pending' in group) return { kind: 'wait' as const, reason: 'sandbox_pending' as const };
  const attemptId = newId('att');
  // The turn row is locked by the claim, so it is still queued here.
  if (!(await startAttempt(trx, { jobId: job.job_id, turnId: turn.turn_id, seq: turn.seq, attemptId, hostId: placed.hostId, generation: group.generation }))) {
    throw new Error(`turn ${turn.turn_id} left queued under its row lock`);
  }
  await noteNewWork(trx, group.groupId, turn.turn_id);
  await trx('agent_turns').where({ turn_id: turn.turn_id }).whereNotNull('wait_reason').update({ wait_reason: null });
  const admitted: AdmittedTurn = {
    kind: 'admitted' as const, seq: turn.seq, turnId: turn.turn_id, attemptId, hostId: placed.hostId,
    groupId: group.groupId, generation: group.generation, uid: group.uid,
    repo: job.repo, baseRef: job.base_ref, baseSha: job.base_sha,
    ...(group.restore ? { restore: group.restore } : {}),
    ...(limits.turnLimits ? { limits: limits.turnLimits } : {}),
    executionProfile: where.profile,
  };
  await trx('agent_attempts').where({ attempt_id: attemptId }).update({
    admission: JSON.stringify(admitted), dispatched_run: by.claimHostId !== undefined ? null : by.runId ?? 'unrecorded',
    ...(limits.turnLimits ? { limits: JSON.stringify(limits.turnLimits) } : {}),
  });
  return admitted;
}

/**
 * The admission of turn `seq` waiting for workflow run `runId`: a host's claim not yet taken, or
 * one this run took before (its answer lost to a retry or a cancelled call). Marks it taken.
 */
async function takeAdmission(trx: Knex.Transaction, input: { jobId: string; seq: number }, runId: string): Promise<AdmittedTurn | undefined> {
  const rows: Array<{ admission: AdmittedTurn }> = await trx('agent_attempts as a')
    .whereIn('a.attempt_id', trx('agent_turns').select('attempt_id').where({ job_id: input.jobId, seq: input.seq, state: 'running' }))
    .where('a.state', 'running').whereNotNull('a.admission')
    .where((q) => q.whereNull('a.dispatched_run').orWhere('a.dispatched_run', runId))
    .update({ dispatched_run: runId }, ['a.admission']);
  return rows[0]?.admission;
}

/**
 * Admits turn `seq` of chat `jobId` when it is next, queued and a slot is free; or hands workflow
 * run `runId` the admission a host's claim made for it.
 */
export async function admitTurn(db: Db, input: { jobId: string; seq: number; runId?: string }, limits: AdmissionLimits): Promise<Admission> {
  const admission = await db.transaction(async (trx): Promise<Admission> => {
    const claim = await claimNextTurn(trx, input);
    if (claim.kind === 'skipped' && claim.state === 'running' && input.runId !== undefined) {
      return (await takeAdmission(trx, input, input.runId)) ?? claim;
    }
    if (claim.kind !== 'claimable') return claim;
    return admitClaimed(trx, claim, limits, input.runId !== undefined ? { runId: input.runId } : {});
  });
  if (admission.kind === 'wait') await recordWaitReason(db, input, admission.reason);
  return admission;
}

/** Shows the owner why the queued turn waits (written only when the reason changed; a turn admitted or cancelled meanwhile is left alone). */
async function recordWaitReason(db: Db, input: { jobId: string; seq: number }, reason: WaitReason): Promise<void> {
  await db('agent_turns').where({ job_id: input.jobId, seq: input.seq, state: 'queued' })
    .where((q) => q.whereNull('wait_reason').orWhereNot('wait_reason', reason))
    .update({ wait_reason: reason });
}
