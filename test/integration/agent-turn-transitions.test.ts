/**
 * The turn state machine on real PostgreSQL (agent/jobs/turn-transitions.ts, turn-admission.ts):
 * every allowed transition changes the turn, its attempt and its control event as docs/agent-api.md says;
 * every transition tried from a state it does not allow changes no row at all; and concurrent
 * claims (or a claim and a cancel) of the same turn let exactly one of them apply.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb, type Db } from '../../lib/db';
import { newId } from '../../agent/jobs/job-store';
import { admitTurn, type Admission } from '../../agent/jobs/turn-admission';
import {
  abandonRunningTurn, cancelTurn, claimNextTurn, finishAttempt, nextActiveTurn, queueTurn, startAttempt,
  type AttemptState, type TurnOutcome, type TurnState,
} from '../../agent/jobs/turn-transitions';
import { insertHost, insertOwner } from '../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../support/db';

const LIMITS = { staleSeconds: 90, defaultSlots: 3 };
const TERMINAL: TurnState[] = ['completed', 'failed', 'cancelled'];
const ENDED_ATTEMPTS: AttemptState[] = ['completed', 'failed', 'cancelled', 'abandoned'];

describe('turn state machine (PostgreSQL)', () => {
  let t: TestDatabase;
  /** A pool wide enough for several transactions at once. */
  let wide: Db;
  let ownerId: number;

  before(async () => {
    t = await freshDatabase();
    wide = createDb({ url: t.url, poolMax: 12, applicationName: 'turn-transitions-test' });
    ownerId = await insertOwner(t.db, 'owner@example.test');
    await insertHost(t.db, 'host-a', { slotsTotal: 1000 }); // never the limit here: turns stay running across tests
  });
  after(async () => {
    await wide.destroy();
    await t.drop();
  });

  async function newJob(): Promise<string> {
    const jobId = newId('job');
    await t.db('agent_jobs').insert({ job_id: jobId, owner_id: ownerId, title: 'test job', model: 'test-model' });
    return jobId;
  }

  /** A job whose turns are queued through the state machine, one per prompt. */
  async function jobWithTurns(count = 1): Promise<{ jobId: string; turnIds: string[] }> {
    const jobId = await newJob();
    const turnIds: string[] = [];
    for (let seq = 1; seq <= count; seq += 1) {
      turnIds.push((await t.db.transaction((trx) => queueTurn(trx, { jobId, seq, prompt: `prompt ${seq}` }))).turn_id);
    }
    return { jobId, turnIds };
  }

  /** Turn 1 of a new job admitted (running, with a running attempt on host-a). */
  async function runningTurn(): Promise<{ jobId: string; turnId: string; attemptId: string }> {
    const { jobId, turnIds } = await jobWithTurns();
    const admission = await admitTurn(t.db, { jobId, seq: 1 }, LIMITS);
    assert.equal(admission.kind, 'admitted');
    return { jobId, turnId: turnIds[0]!, attemptId: (admission as { attemptId: string }).attemptId };
  }

  /** A turn forced into `state` (with an attempt in `attemptState` when given), bypassing the machine: the from-states to refuse. */
  async function turnIn(state: TurnState, attemptState?: AttemptState): Promise<{ jobId: string; turnId: string; attemptId: string | null }> {
    const { jobId, turnIds } = await jobWithTurns();
    const turnId = turnIds[0]!;
    let attemptId: string | null = null;
    if (attemptState) {
      attemptId = newId('att');
      await t.db('agent_attempts').insert({ attempt_id: attemptId, turn_id: turnId, job_id: jobId, host_id: 'host-a', state: attemptState });
    }
    await t.db('agent_turns').where({ turn_id: turnId }).update({ state, attempt_id: attemptId });
    return { jobId, turnId, attemptId };
  }

  /** Every row of the job's turns, attempts, events, sandboxes and the job itself. */
  async function rowsOf(jobId: string): Promise<unknown> {
    return {
      job: await t.db('agent_jobs').where({ job_id: jobId }).first<Record<string, unknown>>(),
      turns: await t.db('agent_turns').where({ job_id: jobId }).orderBy('seq'),
      attempts: await t.db('agent_attempts').where({ job_id: jobId }).orderBy('attempt_id'),
      events: await t.db('agent_events').where({ job_id: jobId }).orderBy('event_id'),
      members: await t.db('agent_sandbox_members').where({ job_id: jobId }),
    };
  }

  const turnRow = (turnId: string) => t.db('agent_turns').where({ turn_id: turnId })
    .first<{ state: TurnState; attempt_id: string | null; result: string | null; error: string | null; started_at: Date | null; finished_at: Date | null; cancel_requested_at: Date | null }>();
  const attemptRow = (attemptId: string) => t.db('agent_attempts').where({ attempt_id: attemptId })
    .first<{ state: AttemptState; error: string | null; finished_at: Date | null; host_id: string }>();
  const eventTypes = async (jobId: string) => (await t.db('agent_events').where({ job_id: jobId }).orderBy('event_id').select<Array<{ event_type: string }>>('event_type')).map((e) => e.event_type);

  describe('allowed transitions', () => {
    it('queues a turn with its turn_queued event', async () => {
      const { jobId, turnIds } = await jobWithTurns(2);
      assert.equal((await turnRow(turnIds[1]!)).state, 'queued');
      assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_queued']);
      assert.deepEqual(await nextActiveTurn(t.db, jobId), { turn_id: turnIds[0], seq: 1, state: 'queued', attempt_id: null });
    });

    it('admits the next queued turn: queued → running with a running attempt, its sandbox group and turn_started', async () => {
      const { jobId, turnId, attemptId } = await runningTurn();
      const turn = await turnRow(turnId);
      assert.equal(turn.state, 'running');
      assert.equal(turn.attempt_id, attemptId);
      assert.ok(turn.started_at);
      const attempt = await attemptRow(attemptId);
      assert.equal(attempt.state, 'running');
      assert.equal(attempt.host_id, 'host-a');
      const job = await t.db('agent_jobs').where({ job_id: jobId }).first<{ host_id: string; group_id: string }>();
      assert.equal(job.host_id, 'host-a');
      assert.ok(job.group_id);
      assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_started']);
    });

    const endings: Array<[TurnOutcome, TurnState, AttemptState, string]> = [
      [{ kind: 'completed', result: 'done' }, 'completed', 'completed', 'turn_completed'],
      [{ kind: 'failed', error: 'broke' }, 'failed', 'failed', 'turn_failed'],
      [{ kind: 'cancelled' }, 'cancelled', 'cancelled', 'turn_cancelled'],
      [{ kind: 'lost', error: 'host gone' }, 'failed', 'abandoned', 'turn_failed'],
    ];
    for (const [outcome, turnState, attemptState, event] of endings) {
      it(`finishes a running attempt ${outcome.kind}: turn → ${turnState}, attempt → ${attemptState}, ${event}; a retry changes nothing`, async () => {
        const { jobId, turnId, attemptId } = await runningTurn();
        assert.equal(await t.db.transaction((trx) => finishAttempt(trx, { attemptId, outcome })), 'finished');
        const turn = await turnRow(turnId);
        assert.equal(turn.state, turnState);
        assert.ok(turn.finished_at);
        assert.equal(turn.result, outcome.kind === 'completed' ? 'done' : null);
        assert.equal(turn.error, 'error' in outcome ? outcome.error : null);
        assert.equal((await attemptRow(attemptId)).state, attemptState);
        assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_started', event]);
        const after = await rowsOf(jobId);
        assert.equal(await t.db.transaction((trx) => finishAttempt(trx, { attemptId, outcome })), 'not_running');
        assert.deepEqual(await rowsOf(jobId), after);
      });
    }

    it('abandons a running turn whose attempt no workflow watches (attempt abandoned, turn failed), and one without an attempt', async () => {
      const { jobId, turnId, attemptId } = await runningTurn();
      assert.equal(await t.db.transaction((trx) => abandonRunningTurn(trx, { jobId, seq: 1, reason: 'restarted' })), true);
      assert.deepEqual([(await turnRow(turnId)).state, (await turnRow(turnId)).error, (await attemptRow(attemptId)).state], ['failed', 'restarted', 'abandoned']);
      const bare = await turnIn('running');
      assert.equal(await t.db.transaction((trx) => abandonRunningTurn(trx, { jobId: bare.jobId, seq: 1, reason: 'restarted' })), true);
      assert.equal((await turnRow(bare.turnId)).state, 'failed');
    });

    it('cancels a queued turn at once (turn_cancelled) and marks a running one for the workflow to stop', async () => {
      const { jobId, turnIds } = await jobWithTurns(2);
      assert.deepEqual(await t.db.transaction((trx) => cancelTurn(trx, { jobId, seq: 2 })), { kind: 'cancelled', turn_id: turnIds[1], seq: 2 });
      const cancelled = await turnRow(turnIds[1]!);
      assert.equal(cancelled.state, 'cancelled');
      assert.ok(cancelled.cancel_requested_at && cancelled.finished_at);
      assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_queued', 'turn_cancelled']);

      const running = await runningTurn();
      assert.deepEqual(await t.db.transaction((trx) => cancelTurn(trx, { jobId: running.jobId, seq: 1 })), { kind: 'cancel_requested', turn_id: running.turnId, seq: 1 });
      const marked = await turnRow(running.turnId);
      assert.equal(marked.state, 'running');
      assert.ok(marked.cancel_requested_at);
      assert.equal(marked.finished_at, null);
    });

    it('admits turn 2 only once turn 1 is terminal; a cancelled queued turn is skipped, never overtaken', async () => {
      const { jobId } = await jobWithTurns(3);
      assert.deepEqual(await admitTurn(t.db, { jobId, seq: 2 }, LIMITS), { kind: 'skipped', state: 'not_next' });
      await t.db.transaction((trx) => cancelTurn(trx, { jobId, seq: 1 }));
      const second = await admitTurn(t.db, { jobId, seq: 2 }, LIMITS);
      assert.equal(second.kind, 'admitted');
      assert.deepEqual(await admitTurn(t.db, { jobId, seq: 3 }, LIMITS), { kind: 'skipped', state: 'not_next' });
    });
  });

  describe('refused from-states change no row', () => {
    for (const state of ['running', ...TERMINAL] as TurnState[]) {
      it(`start of an attempt (and admission) refuses a ${state} turn`, async () => {
        const { jobId, turnId } = await turnIn(state, state === 'running' ? 'running' : undefined);
        const before = await rowsOf(jobId);
        assert.equal(await t.db.transaction((trx) => startAttempt(trx, { jobId, turnId, seq: 1, attemptId: newId('att'), hostId: 'host-a', generation: 1 })), false);
        const admission: Admission = await admitTurn(t.db, { jobId, seq: 1 }, LIMITS);
        assert.deepEqual(admission, state === 'running' ? { kind: 'skipped', state: 'running' } : { kind: 'skipped', state: 'not_next' });
        assert.deepEqual(await rowsOf(jobId), before);
      });
    }

    for (const attemptState of ENDED_ATTEMPTS) {
      it(`finish refuses an attempt already ${attemptState}`, async () => {
        const { jobId, attemptId } = await turnIn('running', attemptState);
        const before = await rowsOf(jobId);
        assert.equal(await t.db.transaction((trx) => finishAttempt(trx, { attemptId: attemptId!, outcome: { kind: 'completed', result: 'late' } })), 'not_running');
        assert.deepEqual(await rowsOf(jobId), before);
      });
    }

    it('finish of a running attempt leaves a turn alone that is no longer running on it', async () => {
      for (const state of TERMINAL) {
        const { jobId, turnId, attemptId } = await turnIn(state, 'running');
        const turnBefore = await turnRow(turnId);
        const eventsBefore = await eventTypes(jobId);
        assert.equal(await t.db.transaction((trx) => finishAttempt(trx, { attemptId: attemptId!, outcome: { kind: 'failed', error: 'late' } })), 'attempt_only');
        assert.deepEqual(await turnRow(turnId), turnBefore, state);
        assert.deepEqual(await eventTypes(jobId), eventsBefore);
        assert.equal((await attemptRow(attemptId!)).state, 'failed');
      }
    });

    for (const state of ['queued', ...TERMINAL] as TurnState[]) {
      it(`abandon refuses a ${state} turn`, async () => {
        const { jobId } = await turnIn(state);
        const before = await rowsOf(jobId);
        assert.equal(await t.db.transaction((trx) => abandonRunningTurn(trx, { jobId, seq: 1, reason: 'restarted' })), false);
        assert.deepEqual(await rowsOf(jobId), before);
      });
    }

    for (const state of TERMINAL) {
      it(`cancel refuses a ${state} turn`, async () => {
        const { jobId, turnId } = await turnIn(state);
        const before = await rowsOf(jobId);
        assert.deepEqual(await t.db.transaction((trx) => cancelTurn(trx, { jobId, seq: 1 })), { kind: 'finished', turn_id: turnId, seq: 1, state });
        assert.deepEqual(await rowsOf(jobId), before);
      });
    }

    it('cancel of an unknown turn and claim of a missing job change nothing', async () => {
      const { jobId } = await jobWithTurns();
      const before = await rowsOf(jobId);
      assert.deepEqual(await t.db.transaction((trx) => cancelTurn(trx, { jobId, seq: 9 })), { kind: 'not_found', seq: 9 });
      assert.deepEqual(await t.db.transaction((trx) => claimNextTurn(trx, { jobId: newId('job'), seq: 1 })), { kind: 'job_missing' });
      assert.deepEqual(await rowsOf(jobId), before);
    });

    it('admission without a free slot waits and writes nothing but the turn\'s reason for waiting', async () => {
      await insertHost(t.db, 'host-full', { slotsTotal: 0 });
      const { jobId } = await jobWithTurns();
      await t.db('agent_jobs').where({ job_id: jobId }).update({ host_id: 'host-full' });
      const before = await rowsOf(jobId) as { turns: Array<{ seq: number; wait_reason: string | null }> };
      assert.deepEqual(await admitTurn(t.db, { jobId, seq: 1 }, LIMITS), { kind: 'wait', reason: 'host_full' });
      const after = await rowsOf(jobId) as typeof before;
      assert.equal(after.turns[0]?.wait_reason, 'host_full', 'the owner can see why it waits');
      assert.deepEqual({ ...after, turns: after.turns.map((turn) => ({ ...turn, wait_reason: null })) }, before);
    });
  });

  describe('concurrent claims of one turn', () => {
    it('admits the turn exactly once when several admissions race', async () => {
      const { jobId, turnIds } = await jobWithTurns();
      const results = await Promise.all(Array.from({ length: 6 }, () => admitTurn(wide, { jobId, seq: 1 }, LIMITS)));
      const admitted = results.filter((r) => r.kind === 'admitted');
      assert.equal(admitted.length, 1, JSON.stringify(results));
      // The others found the turn running, or found the chat held by the winner (SKIP LOCKED: they do not wait) and try again later.
      for (const r of results) if (r.kind !== 'admitted') assert.ok(r.kind === 'busy' || (r.kind === 'skipped' && r.state === 'running'), JSON.stringify(r));
      const attempts = await t.db('agent_attempts').where({ turn_id: turnIds[0] }).select('attempt_id');
      assert.deepEqual(attempts, [{ attempt_id: (admitted[0] as { attemptId: string }).attemptId }]);
      assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_started']);
    });

    it('lets exactly one of two attempt starts win on the turn row alone (the second waits, then finds it running)', async () => {
      const { jobId, turnIds } = await jobWithTurns();
      const turnId = turnIds[0]!;
      const first = await wide.transaction();
      try {
        assert.equal(await startAttempt(first, { jobId, turnId, seq: 1, attemptId: newId('att'), hostId: 'host-a', generation: 1 }), true);
        const second = wide.transaction((trx) => startAttempt(trx, { jobId, turnId, seq: 1, attemptId: newId('att'), hostId: 'host-a', generation: 1 }));
        await sleep(300); // the second UPDATE is now waiting for the first's row lock
        await first.commit();
        assert.equal(await second, false);
      } finally {
        if (!first.isCompleted()) await first.rollback();
      }
      assert.equal((await t.db('agent_attempts').where({ turn_id: turnId })).length, 1);
      assert.deepEqual(await eventTypes(jobId), ['turn_queued', 'turn_started']);
    });

    it('a cancel and an admission of the same queued turn: exactly one applies', async () => {
      for (let round = 0; round < 5; round += 1) {
        const { jobId, turnIds } = await jobWithTurns();
        const [cancel, admission] = await Promise.all([
          wide.transaction((trx) => cancelTurn(trx, { jobId, seq: 1 })),
          admitTurn(wide, { jobId, seq: 1 }, LIMITS),
        ]);
        const turn = await turnRow(turnIds[0]!);
        if (admission.kind === 'admitted') {
          assert.equal(cancel.kind, 'cancel_requested');
          assert.equal(turn.state, 'running');
        } else {
          assert.equal(cancel.kind, 'cancelled');
          // The cancel held the chat's row: the admission did not wait for it (`busy`); tried again, it finds the turn gone.
          if (admission.kind === 'busy') assert.deepEqual(await admitTurn(wide, { jobId, seq: 1 }, LIMITS), { kind: 'skipped', state: 'not_next' });
          else assert.deepEqual(admission, { kind: 'skipped', state: 'not_next' });
          assert.equal(turn.state, 'cancelled');
          assert.equal((await t.db('agent_attempts').where({ job_id: jobId })).length, 0);
        }
      }
    });
  });
});
