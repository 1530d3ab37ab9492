/**
 * `POST /v1/agent/jobs/{job_id}/fork` on real PostgreSQL (docs/sandboxes.md "Forks"): a fork is a
 * new chat of the owner in the original's sandbox group with the next free UID and its anchor
 * recorded; the rules (completed anchor, owner only, cold or deleted sandbox, `sessions_per_sandbox`)
 * refuse with a clear 4xx and write nothing; a pending operator action makes the fork's turn wait.
 */
import assert from 'node:assert/strict';
import { admitTurn, FIRST_MEMBER_UID } from '../../../../agent/jobs/turn-admission';
import { attemptContext } from '../../../../agent/jobs/attempt-context';
import { finishAttempt } from '../../../../agent/jobs/turn-transitions';
import { postJson } from '../../../support/accounts';
import { createOwner, createTurn, type TestOwner } from '../../../support/agent-records';
import { insertHost, insertJobWithTurn } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { uniqueTaskQueue } from '../../../support/temporal';

describe('forking a chat at a turn (owner API, PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let stranger: TestOwner;

  before(async () => {
    t = await freshDatabase();
    owner = await createOwner(t.db);
    stranger = await createOwner(t.db);
    await insertHost(t.db, 'fork-host', { slotsTotal: 8, capabilities: ['container', 'untrusted-vm-v1', 'trusted-v1'] });
    api = await startTestApi({ db: t.db, env: { TEMPORAL_CONTROL_TASK_QUEUE: uniqueTaskQueue('fork-control') } });
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  /** A chat of `owner` whose turns 1..n are completed, in its own sandbox group on fork-host. */
  async function chatWithTurns(n: number, userId = owner.userId): Promise<{ jobId: string; groupId: string }> {
    const { jobId, turnId } = await insertJobWithTurn(t.db, userId);
    const admitted = await admitTurn(t.db, { jobId, seq: 1 }, { staleSeconds: 90, defaultSlots: 8 });
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') throw new Error('not admitted');
    await t.db('agent_attempts').where({ attempt_id: admitted.attemptId }).update({ state: 'completed' });
    await t.db('agent_turns').where({ turn_id: turnId }).update({ state: 'completed' });
    await t.db('agent_sandboxes').where({ group_id: admitted.groupId }).update({ state: 'running' });
    for (let seq = 2; seq <= n; seq++) await createTurn(t.db, jobId, seq, 'completed');
    return { jobId, groupId: admitted.groupId };
  }
  const fork = (jobId: string, body: unknown, key = owner.apiKey) =>
    postJson(`${api.url}/v1/agent/jobs/${jobId}/fork`, body, { authorization: `Bearer ${key}` });
  const jobCount = async () => Number((await t.db('agent_jobs').count<Array<{ count: string }>>({ count: '*' }))[0]!.count);

  it('creates the fork in the same group with the next free UID, its anchor recorded and its first turn queued', async () => {
    const { jobId, groupId } = await chatWithTurns(3);
    const res = await fork(jobId, { anchor_seq: 3, prompt: 'try the other way' });
    assert.equal(res.status, 201, await res.clone().text());
    const body = (await res.json()) as { job_id: string; forked_from_job_id: string; anchor_seq: number; historical: boolean; turn: { seq: number; state: string } };
    assert.equal(body.forked_from_job_id, jobId);
    assert.equal(body.anchor_seq, 3);
    assert.equal(body.historical, false, 'the latest turn');
    assert.deepEqual({ seq: body.turn.seq, state: body.turn.state }, { seq: 1, state: 'queued' });
    const row = await t.db('agent_jobs').where({ job_id: body.job_id }).first<{ group_id: string; owner_id: string; model: string; title: string }>();
    assert.equal(row.group_id, groupId);
    assert.equal(row.owner_id, String(owner.userId));
    assert.equal(row.model, 'test-model');
    assert.equal(row.title, 'Fork of test job');
    const members = await t.db('agent_sandbox_members').where({ group_id: groupId }).orderBy('uid').select('job_id', 'uid');
    assert.deepEqual(members, [{ job_id: jobId, uid: FIRST_MEMBER_UID }, { job_id: body.job_id, uid: FIRST_MEMBER_UID + 1 }]);

    const second = await fork(jobId, { anchor_seq: 1 });
    assert.equal(second.status, 201, await second.clone().text());
    const secondBody = (await second.json()) as { job_id: string; historical: boolean; turn: unknown };
    assert.equal(secondBody.historical, true, 'turns 2 and 3 came after the anchor');
    assert.equal(secondBody.turn, null, 'no prompt: the fork waits for its first turn');
    assert.equal((await t.db('agent_sandbox_members').where({ job_id: secondBody.job_id }).first<{ uid: number } | undefined>())?.uid, FIRST_MEMBER_UID + 2);
  });

  it('refuses an anchor that is not a completed turn of the chat, and bad bodies, writing nothing', async () => {
    const { jobId } = await chatWithTurns(1);
    await createTurn(t.db, jobId, 2, 'failed');
    await createTurn(t.db, jobId, 3, 'running');
    const before = await jobCount();
    const failed = await fork(jobId, { anchor_seq: 2 });
    assert.equal(failed.status, 409);
    assert.match(await failed.text(), /Turn 2 is failed; only a completed turn can anchor a fork/);
    assert.equal((await fork(jobId, { anchor_seq: 3 })).status, 409);
    const missing = await fork(jobId, { anchor_seq: 9 });
    assert.equal(missing.status, 400);
    assert.match(await missing.text(), /anchor_seq.*turn 9 does not exist/);
    assert.equal((await fork(jobId, {})).status, 400);
    assert.equal((await fork(jobId, { anchor_seq: '1' })).status, 400);
    assert.equal((await fork(jobId, { anchor_seq: 1, extra: true })).status, 400);
    assert.equal(await jobCount(), before);
  });

  it('answers 404 to another owner and for a deleted chat', async () => {
    const { jobId } = await chatWithTurns(1);
    const before = await jobCount();
    assert.equal((await fork(jobId, { anchor_seq: 1 }, stranger.apiKey)).status, 404);
    assert.equal(await jobCount(), before);
    assert.equal((await fork(jobId, { anchor_seq: 1 }, owner.apiKey)).status, 201, 'its owner may');
    await t.db('agent_jobs').where({ job_id: jobId }).update({ deleted_at: t.db.fn.now() });
    assert.equal((await fork(jobId, { anchor_seq: 1 })).status, 404);
    assert.equal(await jobCount(), before + 1);
  });

  it('refuses a cold or deleted sandbox with what to do, and admits a fork during a pending stop whose turn then waits', async () => {
    const { jobId, groupId } = await chatWithTurns(1);
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ state: 'cold' });
    const cold = await fork(jobId, { anchor_seq: 1 });
    assert.equal(cold.status, 409);
    assert.match(await cold.text(), /archived \(cold\); restore it first by sending a turn to chat/);
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ state: 'deleted' });
    assert.match(await (await fork(jobId, { anchor_seq: 1 })).text(), /deleted by an operator/);

    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ state: 'stop_pending' });
    const pending = await fork(jobId, { anchor_seq: 1, prompt: 'go' });
    assert.equal(pending.status, 201, await pending.clone().text());
    const forkId = ((await pending.json()) as { job_id: string }).job_id;
    assert.deepEqual(await admitTurn(t.db, { jobId: forkId, seq: 1 }, { staleSeconds: 90, defaultSlots: 8 }), { kind: 'wait', reason: 'sandbox_pending' });
    assert.equal((await t.db('agent_turns').where({ job_id: forkId }).first<{ wait_reason: string | null } | undefined>())?.wait_reason, 'sandbox_pending');
  });

  it('refuses a fork above sessions_per_sandbox, naming the limit', async () => {
    const { jobId, groupId } = await chatWithTurns(1);
    await t.db('agent_settings').insert({ key: 'sessions_per_sandbox', value: JSON.stringify(2), sealed: null });
    await api.deps.agentSettings.refresh(true);
    try {
      assert.equal((await fork(jobId, { anchor_seq: 1 })).status, 201);
      const over = await fork(jobId, { anchor_seq: 1 });
      assert.equal(over.status, 409);
      assert.match(await over.text(), /already holds 2 chats, the limit sessions_per_sandbox \(2\)/);
      assert.equal(Number((await t.db('agent_sandbox_members').where({ group_id: groupId }).count<Array<{ count: string }>>({ count: '*' }))[0]!.count), 2);
    } finally {
      await t.db('agent_settings').where({ key: 'sessions_per_sandbox' }).delete();
      await api.deps.agentSettings.refresh(true);
    }
  });

  it('refuses a historical fork its driver or its group cannot cut, naming why', async () => {
    const { jobId, groupId } = await chatWithTurns(2);
    await t.db('agent_jobs').where({ job_id: jobId }).update({ driver: 'codex' });
    assert.equal((await fork(jobId, { anchor_seq: 1 })).status, 201, 'a codex chat of a group whose CLI sessions mark their turns');
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ fork_helper_version: 3 });
    const codex = await fork(jobId, { anchor_seq: 1 });
    assert.equal(codex.status, 409);
    assert.match(await codex.text(), /predates forks of a codex session at an earlier turn \(fork helper version 3, 4 needed\); fork at the latest turn/);
    assert.equal((await fork(jobId, { anchor_seq: 2 })).status, 201, 'the latest turn is fine');
    await t.db('agent_jobs').where({ job_id: jobId }).update({ driver: 'builtin' });
    assert.equal((await fork(jobId, { anchor_seq: 1 })).status, 201, 'a built-in chat of a version 3 group');
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ fork_helper_version: 2 });
    const old = await fork(jobId, { anchor_seq: 1 });
    assert.equal(old.status, 409);
    assert.match(await old.text(), /predates forks at an earlier turn \(fork helper version 2, 3 needed\)/);
  });

  it('places a historical fork\'s first turn only on a host attesting native-fork-at-anchor-v1, tells that host what to cut, and records the fork made', async () => {
    const { jobId, groupId } = await chatWithTurns(2);
    assert.equal((await t.db('agent_sandboxes').where({ group_id: groupId }).first<{ fork_helper_version: number }>('fork_helper_version'))?.fork_helper_version, 4,
      'a new group records the current fork helper version');
    const res = await fork(jobId, { anchor_seq: 1, prompt: 'again' });
    assert.equal(res.status, 201, await res.clone().text());
    const forkId = ((await res.json()) as { job_id: string }).job_id;
    const admit = () => admitTurn(t.db, { jobId: forkId, seq: 1 }, { staleSeconds: 90, defaultSlots: 8 });
    assert.deepEqual(await admit(), { kind: 'wait', reason: 'fork_at_anchor_not_attested' });

    await t.db('agent_hosts').where({ host_id: 'fork-host' }).update({ capabilities: JSON.stringify(['container', 'untrusted-vm-v1', 'trusted-v1', 'native-fork-at-anchor-v1']) });
    try {
      const admitted = await admit();
      assert.equal(admitted.kind, 'admitted');
      if (admitted.kind !== 'admitted') return;
      assert.equal(admitted.uid, FIRST_MEMBER_UID + 1);
      const context = await attemptContext(t.db, { hostId: 'fork-host', attemptId: admitted.attemptId, turnTimeLimitSeconds: 60 });
      assert.deepEqual(context.fork, { from_job_id: jobId, from_uid: FIRST_MEMBER_UID, anchor_seq: 1, historical: true });
      await t.db.transaction((trx) => finishAttempt(trx, { attemptId: admitted.attemptId, outcome: { kind: 'completed', result: 'done' } }));
      const row = await t.db('agent_jobs').where({ job_id: forkId }).first<{ fork_prepared_at: Date | null }>('fork_prepared_at');
      assert.ok(row?.fork_prepared_at, 'the fork\'s own session exists from its first completed turn');
    } finally {
      await t.db('agent_hosts').where({ host_id: 'fork-host' }).update({ capabilities: JSON.stringify(['container', 'untrusted-vm-v1', 'trusted-v1']) });
    }
  });
});
