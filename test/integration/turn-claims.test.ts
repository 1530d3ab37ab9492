/**
 * The shared claim queue over real PostgreSQL (docs/agent-hosts.md "The claim queue"): hosts
 * claiming queued turns at once never claim a turn twice, never run a chat out of order, never
 * exceed a host's slots; a claim never waits behind a row another transaction holds; and the chat
 * workflow's own admission takes the admission a claim made (once per workflow run).
 */
import assert from 'node:assert/strict';
import { admitTurn, type AdmissionLimits } from '../../agent/jobs/turn-admission';
import { claimQueuedTurns } from '../../agent/jobs/turn-claims';
import { finishAttempt } from '../../agent/jobs/turn-transitions';
import { createDb, type Db } from '../../lib/db';
import { createJob, createTurn } from '../support/agent-records';
import { insertHost, insertOwner } from '../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../support/db';

const LIMITS: AdmissionLimits = { staleSeconds: 90, defaultSlots: 3 };

describe('turn claims: one shared queue (FOR UPDATE SKIP LOCKED)', () => {
  let t: TestDatabase;
  /** A pool wide enough for every concurrent claimer plus a lock holder. */
  let wide: Db;
  let ownerId: number;

  before(async () => {
    t = await freshDatabase();
    wide = createDb({ url: t.url, poolMax: 12, applicationName: 'turn-claims-test' });
    ownerId = await insertOwner(t.db, 'owner@example.test');
  });
  after(async () => {
    await wide?.destroy();
    await t?.drop();
  });
  beforeEach(async () => {
    await t.db('agent_attempts').del();
    await t.db('agent_turns').del();
    await t.db('agent_sandbox_members').del();
    await t.db('agent_jobs').update({ group_id: null });
    await t.db('agent_sandboxes').del();
    await t.db('agent_jobs').del();
    await t.db('agent_hosts').del();
  });

  /** `chats` chats with `turns` queued turns each (inserted in chat order, so older chats' turns are older). */
  async function queueChats(chats: number, turns: number): Promise<Array<{ jobId: string; turnIds: string[] }>> {
    const out: Array<{ jobId: string; turnIds: string[] }> = [];
    for (let c = 0; c < chats; c += 1) {
      const jobId = await createJob(t.db, ownerId);
      const turnIds: string[] = [];
      for (let seq = 1; seq <= turns; seq += 1) turnIds.push(await createTurn(t.db, jobId, seq, 'queued'));
      out.push({ jobId, turnIds });
    }
    return out;
  }

  async function runningPerHost(): Promise<Map<string, number>> {
    const rows = await t.db('agent_attempts').where({ state: 'running' }).select('host_id').count<Array<{ host_id: string; n: string }>>({ n: '*' }).groupBy('host_id');
    return new Map(rows.map((r) => [r.host_id, Number(r.n)]));
  }

  it('4 concurrent claimers on 3 hosts drain 30 turns of 10 chats: each turn once, in chat order, slots never exceeded', async function () {
    this.timeout(60_000);
    const slots = new Map([['host-a', 3], ['host-b', 2], ['host-c', 3]]);
    for (const [hostId, n] of slots) await insertHost(t.db, hostId, { slotsTotal: n });
    const chats = await queueChats(10, 3);
    const claimedTurnIds: string[] = [];
    const claimOrder = new Map<string, number[]>();
    const hostOfChat = new Map<string, string>();
    for (let round = 0; round < 40 && claimedTurnIds.length < 30; round += 1) {
      const results = await Promise.all(['host-a', 'host-b', 'host-c', 'host-a'].map((h) => claimQueuedTurns(wide, h, LIMITS)));
      for (const r of results.flat()) {
        claimedTurnIds.push(r.admitted.turnId);
        claimOrder.set(r.jobId, [...(claimOrder.get(r.jobId) ?? []), r.admitted.seq]);
        // A chat stays on the host its first turn was placed on (its retained sandbox).
        assert.equal(hostOfChat.get(r.jobId) ?? r.admitted.hostId, r.admitted.hostId);
        hostOfChat.set(r.jobId, r.admitted.hostId);
      }
      for (const [hostId, n] of await runningPerHost()) assert.ok(n <= slots.get(hostId)!, `${hostId} runs ${n} > ${slots.get(hostId)} slots`);
      const perChat = await t.db('agent_turns').where({ state: 'running' }).select('job_id').count<Array<{ job_id: string; n: string }>>({ n: '*' }).groupBy('job_id');
      assert.ok(perChat.every((r) => Number(r.n) === 1), 'one running turn per chat');
      // Every running attempt ends; the freed slots are claimed in the next round.
      const running = await t.db('agent_attempts').where({ state: 'running' }).pluck<string[]>('attempt_id');
      for (const attemptId of running) await t.db.transaction((trx) => finishAttempt(trx, { attemptId, outcome: { kind: 'completed', result: 'ok' } }));
    }
    assert.equal(claimedTurnIds.length, 30, 'every turn claimed');
    assert.equal(new Set(claimedTurnIds).size, 30, 'no turn claimed twice');
    for (const { jobId } of chats) assert.deepEqual(claimOrder.get(jobId), [1, 2, 3], `chat ${jobId} ran in order`);
    const attempts = await t.db('agent_attempts').count<Array<{ n: string }>>({ n: '*' });
    assert.equal(Number(attempts[0]!.n), 30, 'one attempt per turn');
  });

  it('claims the other turns while one queued turn\'s row is locked, without waiting for it', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    const chats = await queueChats(4, 1);
    const locked = chats[0]!.turnIds[0]!;
    const holder = await wide.transaction();
    try {
      await holder('agent_turns').where({ turn_id: locked }).forUpdate().first('turn_id');
      // Completes while the lock is held (it is released only after this): a claim that waited
      // behind the row would never return here.
      const claimed = await claimQueuedTurns(wide, 'host-a', LIMITS);
      assert.deepEqual(claimed.map((c) => c.admitted.turnId).sort(), chats.slice(1).map((c) => c.turnIds[0]!).sort());
      assert.equal((await holder('agent_turns').where({ turn_id: locked }).first<{ state: string }>('state'))?.state, 'queued');
    } finally {
      await holder.rollback();
    }
  });

  it("gives up at once, claiming nothing, while another transaction holds the host's row", async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    const chats = await queueChats(2, 1);
    const holder = await wide.transaction();
    try {
      await holder('agent_hosts').where({ host_id: 'host-a' }).forUpdate().first('host_id');
      // Returns while the host row is held (released only after this): a claim that queued
      // behind it would never return here.
      assert.deepEqual(await claimQueuedTurns(wide, 'host-a', LIMITS), []);
    } finally {
      await holder.rollback();
    }
    const claimed = await claimQueuedTurns(wide, 'host-a', LIMITS);
    assert.deepEqual(claimed.map((c) => c.admitted.turnId).sort(), chats.map((c) => c.turnIds[0]!).sort());
  });

  it("the chat workflow's admission answers busy instead of waiting while another admission holds the chat", async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    const [chat] = await queueChats(1, 1);
    const holder = await wide.transaction();
    try {
      await holder('agent_jobs').where({ job_id: chat!.jobId }).forUpdate().first('job_id');
      const admission = await admitTurn(wide, { jobId: chat!.jobId, seq: 1, runId: 'run-1' }, LIMITS);
      assert.deepEqual(admission, { kind: 'busy' });
    } finally {
      await holder.rollback();
    }
  });

  it('hands a claimed turn to the first workflow run that asks, again to that run, and never to another run', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 3 });
    const [chat] = await queueChats(1, 2);
    const [claimed] = await claimQueuedTurns(t.db, 'host-a', LIMITS);
    assert.equal(claimed?.admitted.seq, 1);
    const taken = await admitTurn(t.db, { jobId: chat!.jobId, seq: 1, runId: 'run-1' }, LIMITS);
    assert.deepEqual(taken, claimed.admitted);
    // The same run asking again (its answer lost to a cancelled call) gets the same admission.
    assert.deepEqual(await admitTurn(t.db, { jobId: chat!.jobId, seq: 1, runId: 'run-1' }, LIMITS), claimed.admitted);
    assert.deepEqual(await admitTurn(t.db, { jobId: chat!.jobId, seq: 1, runId: 'run-2' }, LIMITS), { kind: 'skipped', state: 'running' });
    // Turn 2 is not claimable while turn 1 runs.
    assert.deepEqual(await claimQueuedTurns(t.db, 'host-a', LIMITS), []);
  });

  it('claims nothing for a host that is full, offline or being removed, and leaves a chat retained on another host alone', async () => {
    await insertHost(t.db, 'host-a', { slotsTotal: 2 });
    await insertHost(t.db, 'host-stale', { slotsTotal: 3, heartbeatAgeSeconds: 600 });
    await insertHost(t.db, 'host-leaving', { slotsTotal: 3, removalRequested: true });
    await queueChats(3, 1);
    assert.deepEqual(await claimQueuedTurns(t.db, 'host-stale', LIMITS), []);
    assert.deepEqual(await claimQueuedTurns(t.db, 'host-leaving', LIMITS), []);
    assert.equal((await claimQueuedTurns(t.db, 'host-a', LIMITS)).length, 2);
    assert.deepEqual(await claimQueuedTurns(t.db, 'host-a', LIMITS), [], 'full');
    await insertHost(t.db, 'host-b', { slotsTotal: 3 });
    const retained = await createJob(t.db, ownerId, 'host-a');
    await createTurn(t.db, retained, 1, 'queued');
    const onB = await claimQueuedTurns(t.db, 'host-b', LIMITS);
    assert.ok(onB.every((c) => c.jobId !== retained), 'a chat retained on host-a is not claimed by host-b');
    assert.equal(onB.length, 1, 'the remaining new chat');
  });
});
