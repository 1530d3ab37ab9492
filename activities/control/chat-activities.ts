/**
 * Control-queue activities of the chat workflow: every read and write of a chat's turns,
 * attempts and sandbox records, each one transaction and idempotent, so a retried activity or a
 * restarted control worker never runs a turn twice or skips one. PostgreSQL is the source of truth.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import { newId } from '../../agent/jobs/job-store';
import { placeTurn } from '../../agent/hosts/placement';
import { appendEvents } from '../../agent/events/event-store';
import { FailureType } from '../../workflows/definitions/failures';

export type TurnState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

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
};

export type TurnOutcome =
  | { kind: 'completed'; result: string }
  | { kind: 'failed'; error: string }
  | { kind: 'lost'; error: string }
  | { kind: 'cancelled' };

/** The first member of a group runs as this UID; later members (forks) take the next free one. */
export const FIRST_MEMBER_UID = 10001;

export interface ChatActivityDeps {
  db: Db;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'AGENT_HOST_SLOTS'>;
}

interface TurnRow {
  turn_id: string;
  seq: number;
  state: TurnState;
  attempt_id: string | null;
}

/** The lowest-numbered turn of the chat that is not terminal. */
async function firstActiveTurn(db: Db | Knex.Transaction, jobId: string, lock = false): Promise<TurnRow | undefined> {
  const query = db('agent_turns')
    .where({ job_id: jobId })
    .whereIn('state', ['queued', 'running'])
    .orderBy('seq', 'asc')
    .first<TurnRow | undefined>('turn_id', 'seq', 'state', 'attempt_id');
  return lock ? query.forUpdate() : query;
}

export function createChatActivities(deps: ChatActivityDeps) {
  const { db } = deps;

  async function controlEvent(trx: Knex.Transaction, jobId: string, turn: { seq: number; attemptId: string | null }, type: 'turn_started' | 'turn_completed' | 'turn_failed' | 'turn_cancelled', payload: Record<string, unknown>): Promise<void> {
    await appendEvents(trx, jobId, [{
      turnSeq: turn.seq, attemptId: turn.attemptId, seq: 0, eventType: type, payload,
      isError: type === 'turn_failed', dedupeKey: `control:${jobId}:${turn.seq}:${turn.attemptId ?? '-'}:${type}`,
    }]);
  }

  async function ensureGroup(trx: Knex.Transaction, job: { job_id: string; group_id: string | null }, hostId: string): Promise<{ groupId: string; generation: number; uid: number }> {
    if (job.group_id) {
      const group = await trx('agent_sandboxes').where({ group_id: job.group_id }).first<{ generation: number }>('generation');
      const member = await trx('agent_sandbox_members').where({ job_id: job.job_id }).first<{ uid: number }>('uid');
      if (!group || !member) throw ApplicationFailure.nonRetryable(`sandbox group ${job.group_id} of ${job.job_id} is missing`, FailureType.sandboxMissing);
      return { groupId: job.group_id, generation: group.generation, uid: member.uid };
    }
    const groupId = newId('grp');
    await trx('agent_sandboxes').insert({ group_id: groupId, host_id: hostId, container_name: `sbx-${groupId}`, generation: 1, state: 'starting' });
    await trx('agent_sandbox_members').insert({ job_id: job.job_id, group_id: groupId, uid: FIRST_MEMBER_UID });
    await trx('agent_jobs').where({ job_id: job.job_id }).update({ group_id: groupId, host_id: hostId, updated_at: trx.fn.now() });
    return { groupId, generation: 1, uid: FIRST_MEMBER_UID };
  }

  /** Ends an attempt and its turn with `outcome` (a no-op when already recorded). */
  async function finishTurn(input: { attemptId: string; outcome: TurnOutcome }): Promise<void> {
    await db.transaction(async (trx) => {
      const attempt = await trx('agent_attempts').where({ attempt_id: input.attemptId }).forUpdate()
        .first<{ state: string; turn_id: string; job_id: string } | undefined>('state', 'turn_id', 'job_id');
      if (!attempt || attempt.state !== 'running') return;
      const turn = await trx('agent_turns').where({ turn_id: attempt.turn_id }).forUpdate().first<{ seq: number; state: TurnState; attempt_id: string | null }>('seq', 'state', 'attempt_id');
      const { outcome } = input;
      const attemptState = outcome.kind === 'lost' ? 'abandoned' : outcome.kind;
      await trx('agent_attempts').where({ attempt_id: input.attemptId }).update({
        state: attemptState, finished_at: trx.raw('clock_timestamp()'), error: 'error' in outcome ? outcome.error : null,
      });
      if (!turn || turn.state !== 'running' || turn.attempt_id !== input.attemptId) return;
      const turnState: TurnState = outcome.kind === 'lost' ? 'failed' : outcome.kind;
      await trx('agent_turns').where({ turn_id: attempt.turn_id }).update({
        state: turnState, finished_at: trx.raw('clock_timestamp()'),
        result: outcome.kind === 'completed' ? outcome.result : null,
        error: 'error' in outcome ? outcome.error : null,
      });
      await trx('agent_jobs').where({ job_id: attempt.job_id }).update({ updated_at: trx.fn.now() });
      const type = turnState === 'completed' ? 'turn_completed' : turnState === 'cancelled' ? 'turn_cancelled' : 'turn_failed';
      const payload = outcome.kind === 'completed' ? { result: outcome.result } : 'error' in outcome ? { error: outcome.error } : { reason: 'stopped by the owner' };
      await controlEvent(trx, attempt.job_id, { seq: turn.seq, attemptId: input.attemptId }, type, payload);
    });
  }

  return {
    /** The next turn the chat must deal with (its lowest non-terminal turn), or null when idle. */
    async nextTurn(input: { jobId: string }): Promise<{ seq: number; state: TurnState } | null> {
      const row = await firstActiveTurn(db, input.jobId);
      return row ? { seq: row.seq, state: row.state } : null;
    },

    /**
     * Claims a host slot for turn `seq` when it is still the chat's first non-terminal turn and
     * queued. Throws the retryable `NoFreeSlot` while no slot is free; returns `skipped` when the
     * turn is no longer queued (cancelled meanwhile) or is not next.
     */
    async admitTurn(input: { jobId: string; seq: number }): Promise<AdmittedTurn | { kind: 'skipped'; state: TurnState | 'not_next' }> {
      return db.transaction(async (trx) => {
        const job = await trx('agent_jobs').where({ job_id: input.jobId }).forUpdate()
          .first<{ job_id: string; host_id: string | null; group_id: string | null; repo: string | null; base_ref: string | null; base_sha: string | null; deleted_at: Date | null }>();
        if (!job) throw ApplicationFailure.nonRetryable(`job ${input.jobId} does not exist`, FailureType.jobMissing);
        const first = await firstActiveTurn(trx, input.jobId, true);
        if (!first || first.seq !== input.seq) return { kind: 'skipped' as const, state: 'not_next' as const };
        if (first.state !== 'queued') return { kind: 'skipped' as const, state: first.state };
        const placed = await placeTurn(trx, { jobHostId: job.host_id, staleSeconds: deps.settings.AGENT_HOST_STALE_SECONDS, defaultSlots: deps.settings.AGENT_HOST_SLOTS });
        if ('wait' in placed) throw ApplicationFailure.retryable(`No free execution slot (${placed.wait})`, FailureType.noFreeSlot);
        const { groupId, generation, uid } = await ensureGroup(trx, job, placed.hostId);
        const attemptId = newId('att');
        // clock_timestamp(): the moment the slot was taken (after the host lock), not the transaction's start.
        const admittedAt = trx.raw('clock_timestamp()');
        await trx('agent_attempts').insert({ attempt_id: attemptId, turn_id: first.turn_id, job_id: input.jobId, host_id: placed.hostId, state: 'running', generation, started_at: admittedAt });
        await trx('agent_turns').where({ turn_id: first.turn_id }).update({ state: 'running', attempt_id: attemptId, started_at: admittedAt });
        await trx('agent_sandboxes').where({ group_id: groupId }).update({ last_activity_at: trx.fn.now() });
        await controlEvent(trx, input.jobId, { seq: first.seq, attemptId }, 'turn_started', { turn_id: first.turn_id, host_id: placed.hostId });
        return {
          kind: 'admitted' as const, seq: first.seq, turnId: first.turn_id, attemptId, hostId: placed.hostId, groupId, generation, uid,
          repo: job.repo, baseRef: job.base_ref, baseSha: job.base_sha,
        };
      });
    },

    /** Records the container and (first time) the workspace base the host reported. */
    async recordSandbox(input: { jobId: string; groupId: string; containerId: string; baseSha: string }): Promise<void> {
      await db.transaction(async (trx) => {
        await trx('agent_sandboxes').where({ group_id: input.groupId })
          .update({ container_id: input.containerId, state: 'running', updated_at: trx.fn.now(), last_activity_at: trx.fn.now() });
        await trx('agent_jobs').where({ job_id: input.jobId }).whereNull('base_sha').update({ base_sha: input.baseSha, updated_at: trx.fn.now() });
      });
    },

    finishTurn,

    /** Fails a turn whose running attempt no workflow is watching any more. */
    async abandonTurn(input: { jobId: string; seq: number; reason: string }): Promise<void> {
      const turn = await db('agent_turns').where({ job_id: input.jobId, seq: input.seq }).first<{ attempt_id: string | null; state: TurnState; turn_id: string }>('attempt_id', 'state', 'turn_id');
      if (!turn || turn.state !== 'running') return;
      if (turn.attempt_id) {
        await finishTurn({ attemptId: turn.attempt_id, outcome: { kind: 'lost', error: input.reason } });
        return;
      }
      await db('agent_turns').where({ turn_id: turn.turn_id, state: 'running' }).update({ state: 'failed', error: input.reason, finished_at: db.fn.now() });
    },
  };
}

export type ChatActivities = ReturnType<typeof createChatActivities>;
