/**
 * The turn state machine (docs/agent-control-plane.md): the one owner of every state
 * change of `agent_turns` and `agent_attempts`.
 *
 *   turn:    queued → running → completed | failed | cancelled;  queued → cancelled
 *   attempt: running → completed | failed | cancelled | abandoned  (a running attempt holds a slot)
 *
 * One function per transition. Each states its allowed from-states in the `WHERE` of its
 * `UPDATE`, so a transition tried from any other state changes no row and says so in its result;
 * each runs in the caller's transaction (the unit of work of an API command or an activity) and
 * appends its control event there, with a dedupe key that makes a retried transition a no-op.
 * Lock order, shared by every writer: the job row, then turn rows, then attempt rows.
 */
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { appendEvents } from '../events/event-store';
import { newId } from './job-store';

export type TurnState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type AttemptState = 'running' | 'completed' | 'failed' | 'cancelled' | 'abandoned';

/** How a running attempt ended: `lost` (the host vanished) abandons the attempt and fails the turn. */
export type TurnOutcome =
  | { kind: 'completed'; result: string }
  | { kind: 'failed'; error: string }
  | { kind: 'lost'; error: string }
  | { kind: 'cancelled' };

/** A turn that is not terminal yet. */
export interface ActiveTurn {
  turn_id: string;
  seq: number;
  state: 'queued' | 'running';
  attempt_id: string | null;
}

export interface QueuedTurn {
  turn_id: string;
  seq: number;
  state: 'queued';
}

type ControlEventType = 'turn_queued' | 'turn_started' | 'turn_completed' | 'turn_failed' | 'turn_cancelled';

/** A control-plane event of turn `seq`, written once per (turn, attempt, type). */
async function controlEvent(trx: Knex.Transaction, jobId: string, turn: { seq: number; attemptId: string | null }, type: ControlEventType, payload: Record<string, unknown>): Promise<void> {
  await appendEvents(trx, jobId, [{
    turnSeq: turn.seq, attemptId: turn.attemptId, seq: 0, eventType: type, payload,
    isError: type === 'turn_failed', dedupeKey: `control:${jobId}:${turn.seq}:${turn.attemptId ?? '-'}:${type}`,
  }]);
}

/** (new) → queued: records turn `seq` of the job with its prompt. The caller allocates `seq` under the job's row lock. */
export async function queueTurn(trx: Knex.Transaction, input: { jobId: string; seq: number; prompt: string }): Promise<QueuedTurn> {
  const turnId = newId('turn');
  await trx('agent_turns').insert({ turn_id: turnId, job_id: input.jobId, seq: input.seq, prompt: input.prompt, state: 'queued' });
  await controlEvent(trx, input.jobId, { seq: input.seq, attemptId: null }, 'turn_queued', { turn_id: turnId, prompt: input.prompt });
  return { turn_id: turnId, seq: input.seq, state: 'queued' };
}

/**
 * The lowest-numbered turn of the chat that is not terminal: the only one the chat may work on
 * (later turns never overtake it). `lock` takes its row lock (`FOR UPDATE`) for a claim.
 */
export async function nextActiveTurn(db: Db | Knex.Transaction, jobId: string, options: { lock?: boolean } = {}): Promise<ActiveTurn | undefined> {
  const query = db('agent_turns')
    .where({ job_id: jobId })
    .whereIn('state', ['queued', 'running'])
    .orderBy('seq', 'asc')
    .first<ActiveTurn | undefined>('turn_id', 'seq', 'state', 'attempt_id');
  return options.lock ? query.forUpdate() : query;
}

/** The job columns admission reads under the job's row lock. */
export interface ClaimedJob {
  job_id: string;
  host_id: string | null;
  group_id: string | null;
  repo: string | null;
  base_ref: string | null;
  base_sha: string | null;
  execution_profile: ExecutionProfile;
  /** Set for a fork (docs/sandboxes.md "Forks"): its anchor was not the original's latest turn. */
  fork_historical: boolean;
  /** Set once the fork's first turn completed (its native session was made from the original's). */
  fork_prepared_at: Date | null;
  forked_from_job_id: string | null;
}

/**
 * Claims turn `seq` for admission: locks the job row, then the chat's next active turn, and
 * answers `claimable` only when that turn is `seq` and still queued. The locks are held until the
 * caller's transaction ends, so a concurrent cancel of the same chat waits, then finds the turn
 * running; a concurrent admission does not wait but answers `busy` (the job row is taken with SKIP
 * LOCKED) and tries again later. `job_missing` when the job does not exist.
 */
export async function claimNextTurn(trx: Knex.Transaction, input: { jobId: string; seq: number }): Promise<
  | { kind: 'claimable'; job: ClaimedJob; turn: ActiveTurn }
  | { kind: 'skipped'; state: TurnState | 'not_next' }
  | { kind: 'job_missing' }
  | { kind: 'busy' }
> {
  // SKIP LOCKED: a second admission of the chat (its workflow and a host's claim at once) does not
  // queue behind the first; it answers `busy` and is tried again, then finds the turn running.
  const job = await trx('agent_jobs').where({ job_id: input.jobId }).forUpdate().skipLocked()
    .first<ClaimedJob | undefined>('job_id', 'host_id', 'group_id', 'repo', 'base_ref', 'base_sha', 'execution_profile', 'fork_historical', 'fork_prepared_at', 'forked_from_job_id');
  if (!job) return (await trx('agent_jobs').where({ job_id: input.jobId }).first('job_id')) ? { kind: 'busy' } : { kind: 'job_missing' };
  const turn = await nextActiveTurn(trx, input.jobId, { lock: true });
  if (!turn || turn.seq !== input.seq) return { kind: 'skipped', state: 'not_next' };
  if (turn.state !== 'queued') return { kind: 'skipped', state: turn.state };
  return { kind: 'claimable', job, turn };
}

/**
 * queued → running, with a new `running` attempt on `hostId`: the turn's start. `false` (and no
 * row written) when the turn is no longer queued. `clock_timestamp()` is the moment the slot was
 * taken (after the caller's host lock), not the transaction's start.
 */
export async function startAttempt(trx: Knex.Transaction, input: { jobId: string; turnId: string; seq: number; attemptId: string; hostId: string; generation: number }): Promise<boolean> {
  const started = await trx('agent_turns').where({ turn_id: input.turnId, state: 'queued' })
    .update({ state: 'running', attempt_id: input.attemptId, started_at: trx.raw('clock_timestamp()') });
  if (started === 0) return false;
  await trx('agent_attempts').insert({
    attempt_id: input.attemptId, turn_id: input.turnId, job_id: input.jobId, host_id: input.hostId,
    state: 'running', generation: input.generation, started_at: trx.raw('clock_timestamp()'),
  });
  await controlEvent(trx, input.jobId, { seq: input.seq, attemptId: input.attemptId }, 'turn_started', { turn_id: input.turnId, host_id: input.hostId });
  return true;
}

/** What {@link finishAttempt} changed. */
export type FinishResult =
  /** The attempt and its turn ended with the outcome. */
  | 'finished'
  /** The attempt ended; its turn was no longer running on it (already ended or superseded). */
  | 'attempt_only'
  /** Nothing: the attempt is unknown or not running (an outcome is already recorded). */
  | 'not_running';

/**
 * running → the outcome, for an attempt and (when it is still the turn's running attempt) its
 * turn: attempt → completed | failed | cancelled | abandoned (`lost`); turn → completed | failed |
 * cancelled. A retried finish changes nothing.
 */
export async function finishAttempt(trx: Knex.Transaction, input: { attemptId: string; outcome: TurnOutcome }): Promise<FinishResult> {
  const { outcome } = input;
  const attempt = await trx('agent_attempts').where({ attempt_id: input.attemptId }).forUpdate()
    .first<{ state: AttemptState; turn_id: string; job_id: string } | undefined>('state', 'turn_id', 'job_id');
  if (!attempt || attempt.state !== 'running') return 'not_running';
  const turn = await trx('agent_turns').where({ turn_id: attempt.turn_id }).forUpdate().first<{ seq: number } | undefined>('seq');
  const error = 'error' in outcome ? outcome.error : null;
  const attemptState: AttemptState = outcome.kind === 'lost' ? 'abandoned' : outcome.kind;
  const ended = await trx('agent_attempts').where({ attempt_id: input.attemptId, state: 'running' })
    .update({ state: attemptState, finished_at: trx.raw('clock_timestamp()'), error });
  if (ended === 0) return 'not_running';
  const turnState: TurnState = outcome.kind === 'lost' ? 'failed' : outcome.kind;
  const turnEnded = turn === undefined ? 0 : await trx('agent_turns').where({ turn_id: attempt.turn_id, state: 'running', attempt_id: input.attemptId }).update({
    state: turnState, finished_at: trx.raw('clock_timestamp()'),
    result: outcome.kind === 'completed' ? outcome.result : null, error,
  });
  if (turnEnded === 0 || turn === undefined) return 'attempt_only';
  await trx('agent_jobs').where({ job_id: attempt.job_id }).update({ updated_at: trx.fn.now() });
  // A fork's first completed turn ran the host's fork helper: its own session exists from now on (docs/sandboxes.md "Forks").
  if (turnState === 'completed') {
    await trx('agent_jobs').where({ job_id: attempt.job_id }).whereNotNull('forked_from_job_id').whereNull('fork_prepared_at').update({ fork_prepared_at: trx.fn.now() });
  }
  const type = turnState === 'completed' ? 'turn_completed' : turnState === 'cancelled' ? 'turn_cancelled' : 'turn_failed';
  const payload = outcome.kind === 'completed' ? { result: outcome.result } : error !== null ? { error } : { reason: 'stopped by the owner' };
  await controlEvent(trx, attempt.job_id, { seq: turn.seq, attemptId: input.attemptId }, type, payload);
  return 'finished';
}

/**
 * running → failed for turn `seq` when no workflow watches its attempt any more (the chat
 * workflow restarted mid-turn): its running attempt is abandoned with `reason`; a running turn
 * without an attempt fails alone. `false` when the turn is not running (or its attempt already
 * ended), changing nothing.
 */
export async function abandonRunningTurn(trx: Knex.Transaction, input: { jobId: string; seq: number; reason: string }): Promise<boolean> {
  const turn = await trx('agent_turns').where({ job_id: input.jobId, seq: input.seq }).forUpdate()
    .first<{ attempt_id: string | null; state: TurnState; turn_id: string } | undefined>('attempt_id', 'state', 'turn_id');
  if (!turn || turn.state !== 'running') return false;
  if (turn.attempt_id) return (await finishAttempt(trx, { attemptId: turn.attempt_id, outcome: { kind: 'lost', error: input.reason } })) === 'finished';
  const failed = await trx('agent_turns').where({ turn_id: turn.turn_id, state: 'running' }).whereNull('attempt_id')
    .update({ state: 'failed', error: input.reason, finished_at: trx.fn.now() });
  return failed > 0;
}

/** What an owner's cancel of turn `seq` did. */
export type CancelResult =
  /** queued → cancelled: it will never run; later turns still wait their turn. */
  | { kind: 'cancelled'; turn_id: string; seq: number }
  /** running: marked `cancel_requested_at`; the caller signals the workflow, which ends it `cancelled`. */
  | { kind: 'cancel_requested'; turn_id: string; seq: number }
  | { kind: 'not_found'; seq: number }
  /** Already terminal: nothing changes. */
  | { kind: 'finished'; turn_id: string; seq: number; state: TurnState };

/**
 * An owner's cancel of turn `seq`: queued → cancelled at once, or a cancel request on a running
 * turn. Takes the job row lock first (the admission's lock order), so a cancel and a claim of the
 * same turn serialize: exactly one of them applies.
 */
export async function cancelTurn(trx: Knex.Transaction, input: { jobId: string; seq: number }): Promise<CancelResult> {
  const { jobId, seq } = input;
  await trx('agent_jobs').where({ job_id: jobId }).forUpdate().first('job_id');
  const turn = await trx('agent_turns').where({ job_id: jobId, seq }).forUpdate()
    .first<{ turn_id: string; state: TurnState } | undefined>('turn_id', 'state');
  if (!turn) return { kind: 'not_found', seq };
  const cancelled = await trx('agent_turns').where({ turn_id: turn.turn_id, state: 'queued' })
    .update({ state: 'cancelled', cancel_requested_at: trx.fn.now(), finished_at: trx.fn.now() });
  if (cancelled > 0) {
    await controlEvent(trx, jobId, { seq, attemptId: null }, 'turn_cancelled', { turn_id: turn.turn_id, reason: 'cancelled by the owner before it started' });
    return { kind: 'cancelled', turn_id: turn.turn_id, seq };
  }
  const requested = await trx('agent_turns').where({ turn_id: turn.turn_id, state: 'running' }).update({ cancel_requested_at: trx.fn.now() });
  if (requested > 0) return { kind: 'cancel_requested', turn_id: turn.turn_id, seq };
  return { kind: 'finished', turn_id: turn.turn_id, seq, state: turn.state };
}
