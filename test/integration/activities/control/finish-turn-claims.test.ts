/**
 * A freed slot is claimed at once (docs/agent-hosts.md "The claim queue"): the chat activity that
 * ends an attempt has its host claim the oldest queued turn it may run and wakes that chat's
 * workflow through the real Temporal server (signal-with-start on a task queue no worker polls, so
 * the woken workflow is only inspected, never run).
 */
import assert from 'node:assert/strict';
import { createChatActivities } from '../../../../activities/control/chat-activities';
import { ChatDelivery } from '../../../../agent/jobs/chat-delivery';
import { chatWorkflowId } from '../../../../workflows/definitions/chat';
import { loadSettings } from '../../../../lib/settings';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { captureLogs } from '../../../support/logs';
import { temporalEnv, uniqueTaskQueue } from '../../../support/temporal';

describe('chat activities: finishTurn claims the freed slot and wakes the claimed chat', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let env: Awaited<ReturnType<typeof temporalEnv>>;
  const logs = captureLogs('finish-turn-claims');
  const woken: string[] = [];

  before(async () => {
    t = await freshDatabase();
    env = await temporalEnv();
  });
  after(async () => {
    for (const jobId of woken) await env.client.workflow.getHandle(chatWorkflowId(jobId)).terminate('test over').catch(() => undefined);
    await t?.drop();
  });

  it('admits the waiting chat on the host whose attempt ended, and signals its workflow', async () => {
    const settings = loadSettings({ TEMPORAL_CONTROL_TASK_QUEUE: uniqueTaskQueue('finish-turn-claims') });
    const delivery = new ChatDelivery(env.client, settings, logs.log);
    const activities = createChatActivities({
      db: t.db, settings: { AGENT_HOST_STALE_SECONDS: 90, AGENT_HOST_SLOTS: 3 },
      claims: { log: logs.log, wake: async (job) => { woken.push(job.jobId); return delivery.wake(job); } },
    });
    const ownerId = await insertOwner(t.db, 'owner@example.test');
    await insertHost(t.db, 'host-a', { slotsTotal: 2 });
    const first = await insertJobWithTurn(t.db, ownerId);
    const second = await insertJobWithTurn(t.db, ownerId);
    const third = await insertJobWithTurn(t.db, ownerId);
    const a = await activities.admitTurn({ jobId: first.jobId, seq: 1 });
    const b = await activities.admitTurn({ jobId: second.jobId, seq: 1 });
    assert.equal(a.kind, 'admitted');
    assert.equal(b.kind, 'admitted');
    await assert.rejects(activities.admitTurn({ jobId: third.jobId, seq: 1 }), /No free execution slot \(host_full\)/);

    await activities.finishTurn({ attemptId: (a as { attemptId: string }).attemptId, outcome: { kind: 'completed', result: 'ok' } });

    const turn = await t.db('agent_turns').where({ turn_id: third.turnId }).first<{ state: string; attempt_id: string; wait_reason: string | null }>('state', 'attempt_id', 'wait_reason');
    assert.equal(turn?.state, 'running', 'the waiting turn was claimed into the freed slot');
    assert.equal(turn.wait_reason, null);
    const attempt = await t.db('agent_attempts').where({ attempt_id: turn.attempt_id }).first<{ host_id: string; dispatched_run: string | null }>('host_id', 'dispatched_run');
    assert.deepEqual(attempt, { host_id: 'host-a', dispatched_run: null });
    assert.deepEqual(woken, [third.jobId]);
    const history = await env.client.workflow.getHandle(chatWorkflowId(third.jobId)).fetchHistory();
    const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).map((e) => e.workflowExecutionSignaledEventAttributes?.signalName);
    assert.deepEqual(signals, ['wake']);
  });
});
