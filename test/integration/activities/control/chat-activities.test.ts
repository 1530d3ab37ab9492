/**
 * The chat workflow's control activities on real PostgreSQL, for what the idle stop relies on
 * (docs/sandboxes.md "Idle stop"): a turn's end (finished, or abandoned when no workflow watches
 * it any more) is activity of its chat's sandbox group, like its admission; a repeated call that
 * ends nothing leaves the last activity alone.
 */
import assert from 'node:assert/strict';
import { createChatActivities } from '../../../../activities/control/chat-activities';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../../support/db';

const HOST = 'chat-activities-host';

describe('chat activities: the end of a turn is sandbox activity (PostgreSQL)', () => {
  let t: TestDatabase;
  let ownerId: number;
  let activities: ReturnType<typeof createChatActivities>;

  before(async () => {
    t = await freshDatabase();
    ownerId = await insertOwner(t.db, 'chat-activities-owner@example.test');
    await insertHost(t.db, HOST, { slotsTotal: 10 });
    activities = createChatActivities({ db: t.db, settings: { AGENT_HOST_STALE_SECONDS: 90, AGENT_HOST_SLOTS: 3 } });
  });
  after(async () => {
    await t?.drop();
  });

  /** A chat whose first turn is running in a recorded container, its group last active an hour ago. */
  async function runningTurn(): Promise<{ jobId: string; groupId: string; attemptId: string }> {
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    const admitted = await activities.admitTurn({ jobId, seq: 1 });
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') throw new Error('not admitted');
    await activities.recordSandbox({ jobId, groupId: admitted.groupId, containerId: `c-${admitted.groupId}`, baseSha: 'a'.repeat(40), generation: admitted.generation });
    await backdate(admitted.groupId);
    return { jobId, groupId: admitted.groupId, attemptId: admitted.attemptId };
  }

  const backdate = (groupId: string) => t.db('agent_sandboxes').where({ group_id: groupId }).update({ last_activity_at: t.db.raw(`now() - interval '1 hour'`) });
  const lastActivity = async (groupId: string) => (await t.db('agent_sandboxes').where({ group_id: groupId }).first<{ last_activity_at: Date }>('last_activity_at')).last_activity_at;
  const dbNow = async () => (await t.db.raw<{ rows: Array<{ now: Date }> }>('select clock_timestamp() as now')).rows[0]!.now;

  it('finishing a turn moves its group\'s last activity to the end of the turn; a repeat moves nothing', async () => {
    const { groupId, attemptId } = await runningTurn();
    const before = await dbNow();
    await activities.finishTurn({ attemptId, outcome: { kind: 'completed', result: 'done' } });
    assert.ok((await lastActivity(groupId)).getTime() >= before.getTime(), 'the end of the turn is the last activity');

    await backdate(groupId);
    const backdated = await lastActivity(groupId);
    await activities.finishTurn({ attemptId, outcome: { kind: 'completed', result: 'done' } });
    assert.equal((await lastActivity(groupId)).getTime(), backdated.getTime(), 'an attempt already ended is no new activity');
  });

  it('abandoning a lost turn is activity too', async () => {
    const { jobId, groupId } = await runningTurn();
    const before = await dbNow();
    await activities.abandonTurn({ jobId, seq: 1, reason: 'no workflow watches it' });
    assert.equal((await t.db('agent_turns').where({ job_id: jobId }).first<{ state: string }>('state')).state, 'failed');
    assert.ok((await lastActivity(groupId)).getTime() >= before.getTime());
  });
});
