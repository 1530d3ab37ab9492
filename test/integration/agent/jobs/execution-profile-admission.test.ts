/**
 * Admission by execution profile on real PostgreSQL (docs/execution-profiles.md): a turn is placed
 * only on a host attesting its chat's profile; until then it stays queued and its owner's view says
 * why; the group is created with the job's profile, and the admitted turn carries it to the host.
 */
import assert from 'node:assert/strict';
import { admitTurn } from '../../../../agent/jobs/turn-admission';
import { jobView } from '../../../../agent/jobs/job-views';
import type { JobRow } from '../../../../agent/jobs/job-store';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../../support/db';

describe('admission by execution profile (PostgreSQL)', () => {
  let t: TestDatabase;
  let ownerId: number;
  const admit = (jobId: string) => admitTurn(t.db, { jobId, seq: 1 }, { staleSeconds: 90, defaultSlots: 3 });
  const view = async (jobId: string) => jobView(t.db, await t.db('agent_jobs').where({ job_id: jobId }).first<JobRow>());

  before(async () => {
    t = await freshDatabase();
    ownerId = await insertOwner(t.db, 'profile-owner@example.test');
  });
  after(async () => {
    await t?.drop();
  });

  it('keeps an untrusted turn queued with a visible reason while no host attests untrusted-vm-v1, then admits it there', async () => {
    await insertHost(t.db, 'shared-kernel-host', { slotsTotal: 8, capabilities: ['container', 'trusted-v1', 'shared-sandbox-v1'] });
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    assert.equal((await view(jobId)).execution_profile, 'untrusted-vm-v1', 'the safe profile by default');

    assert.deepEqual(await admit(jobId), { kind: 'wait', reason: 'no_attested_host' });
    const waiting = await view(jobId);
    assert.equal(waiting.conversation_state, 'queued', 'waiting is not failing');
    assert.equal(waiting.turns[0]?.state, 'queued');
    assert.equal(waiting.turns[0]?.waiting?.reason, 'no_attested_host');
    assert.match(waiting.turns[0]?.waiting?.message ?? '', /No online host attests this chat's execution profile/);
    assert.equal(await t.db('agent_sandboxes').count<Array<{ count: string }>>({ count: '*' }).then((r) => Number(r[0]!.count)), 0, 'nothing was created');

    await insertHost(t.db, 'gvisor-host', { slotsTotal: 2, capabilities: ['container', 'untrusted-vm-v1', 'trusted-v1'] });
    const admitted = await admit(jobId);
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') return;
    assert.equal(admitted.hostId, 'gvisor-host');
    assert.equal(admitted.executionProfile, 'untrusted-vm-v1', 'the host learns the profile with the turn');
    const group = await t.db('agent_sandboxes').where({ group_id: admitted.groupId }).first<{ execution_profile: string }>('execution_profile');
    assert.equal(group?.execution_profile, 'untrusted-vm-v1');
    const running = await view(jobId);
    assert.equal(running.turns[0]?.waiting, undefined, 'the reason is gone once the turn runs');
    assert.equal(await t.db('agent_turns').where({ job_id: jobId }).first('wait_reason').then((r: { wait_reason: string | null }) => r.wait_reason), null);
  });

  it('a trusted job gets a trusted group; its retained chat waits on its host while that host no longer attests the group profile', async () => {
    await insertHost(t.db, 'only-host', { slotsTotal: 8, capabilities: ['container', 'trusted-v1'] });
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    await t.db('agent_jobs').where({ job_id: jobId }).update({ execution_profile: 'trusted-v1' });
    const first = await admit(jobId);
    assert.equal(first.kind, 'admitted');
    if (first.kind !== 'admitted') return;
    assert.equal(first.hostId, 'only-host');
    assert.equal(first.executionProfile, 'trusted-v1');
    await t.db('agent_attempts').where({ attempt_id: first.attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    await t.db('agent_turns').where({ job_id: jobId, seq: 1 }).update({ state: 'completed', finished_at: t.db.fn.now() });
    await t.db('agent_turns').insert({ turn_id: `${jobId}-t2`, job_id: jobId, seq: 2, state: 'queued', prompt: 'next' });

    await insertHost(t.db, 'only-host', { slotsTotal: 8, capabilities: ['container'] });
    assert.deepEqual(await admitTurn(t.db, { jobId, seq: 2 }, { staleSeconds: 90, defaultSlots: 3 }), { kind: 'wait', reason: 'host_not_attested' });
    assert.equal((await view(jobId)).turns[1]?.waiting?.reason, 'host_not_attested');
    await insertHost(t.db, 'only-host', { slotsTotal: 8, capabilities: ['container', 'trusted-v1'] });
    const second = await admitTurn(t.db, { jobId, seq: 2 }, { staleSeconds: 90, defaultSlots: 3 });
    assert.equal(second.kind, 'admitted');
    if (second.kind === 'admitted') assert.equal(second.executionProfile, 'trusted-v1', 'the group keeps its profile');
  });
});
