/**
 * A chat whose turn waits for a slot starts the moment a slot frees, over the real stack (Temporal,
 * the host runner, the built-in driver, a fake upstream): the finished turn's host claims the
 * waiting turn and wakes its chat workflow (docs/agent-hosts.md "The claim queue"). Nothing else
 * can start it in time here: the host sends no heartbeats during the test (no heartbeat claims),
 * the in-process control worker runs no reconciler, and the waiting chat's own next try for a slot
 * is read from Temporal before the slot frees and is seconds away. The reconciler's recheck of the
 * waiting chat, by contrast, leaves its admission waiting.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';
import { chatWorkflowId } from '../../workflows/definitions/chat';
import { reconcileQueuedTurns } from '../../activities/control/chat-reconciler';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import { captureLogs } from '../support/logs';

async function submitChat(stack: AgentStack, prompt: string): Promise<string> {
  const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { job_id: string }).job_id;
}

/** When the chat's waiting admission call tries again by itself (Temporal's retry schedule), if it is waiting. */
async function nextOwnTry(stack: AgentStack, jobId: string): Promise<number | undefined> {
  const described = await stack.env.client.workflow.getHandle(chatWorkflowId(jobId)).describe();
  const waiting = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'admitTurn');
  const at = waiting?.nextAttemptScheduleTime;
  if (!at?.seconds) return undefined;
  return Number(at.seconds) * 1000 + Math.floor((at.nanos ?? 0) / 1e6);
}

describe('a turn waiting for a slot starts when the slot frees (PostgreSQL + Temporal + Docker)', function () {
  this.timeout(180_000);
  let stack: AgentStack;
  const releases: Array<() => void> = [];

  before(async () => {
    // The waiting chat's own tries back off up to 30 s apart, so they cannot be what starts it in time.
    stack = await startAgentStack({ slots: 2, env: { AGENT_CHAT_ADMISSION_RETRY_SECONDS: '30' } });
    // The first two model calls (the two chats filling both slots) are answered only when the test
    // releases them; every later one at once.
    stack.upstream.setResponder((record) => {
      if (!record.path.endsWith('/chat/completions')) return undefined;
      if (releases.length >= 2) return { kind: 'json', content: 'ok' };
      const held = new Promise<void>((resolve) => { releases.push(resolve); });
      return { kind: 'held', until: held, then: { kind: 'json', content: 'ok' } };
    });
  });
  after(async () => {
    for (const release of releases) release();
    await stack?.close();
  });

  it('claims the waiting turn and dispatches it before the chat would have asked again; a reconciler recheck leaves it waiting', async () => {
    const holders = [await submitChat(stack, 'holds a slot'), await submitChat(stack, 'holds the other slot')];
    await waitFor(() => releases.length === 2, 'both slots held by running turns', 60_000);
    // From here the host is claimed for only by the end of a turn: no heartbeat claims (it stays online for 90 s).
    stack.heartbeat.stop();

    const waiter = await submitChat(stack, 'waits for the slot');
    await waitFor(async () => {
      const turn = await stack.t.db('agent_turns').where({ job_id: waiter, seq: 1 }).first<{ state: string; wait_reason: string | null }>('state', 'wait_reason');
      return turn?.state === 'queued' && turn.wait_reason === 'host_full';
    }, 'the second turn waiting for a slot (host_full)', 30_000);
    // Wait until the chat's own next try is at least 5 s away (its tries back off: 0.5 s, 0.75 s, … up to 30 s).
    const ownTryAt = await waitFor(async () => {
      const at = await nextOwnTry(stack, waiter);
      return at !== undefined && at - Date.now() >= 5_000 ? at : undefined;
    }, "the waiting chat's next own try at least 5 s away", 40_000);

    // The reconciler's wake of a chat whose turn is merely queued only rechecks: it must not cancel
    // the waiting admission (extra history, and the back-off would start again from half a second).
    const reconciled = await reconcileQueuedTurns({ db: stack.t.db, delivery: new ChatDelivery(stack.env.client, stack.settings, captureLogs('reconciler').log), log: captureLogs('reconciler').log, minQueuedSeconds: 0 });
    assert.equal(reconciled, 1, 'the reconciler woke the waiting chat (the holding chats have running turns)');
    // The workflow task that handled the wake has completed: whatever it commanded is in the history.
    const events = await waitFor(async () => {
      const all = (await stack.env.client.workflow.getHandle(chatWorkflowId(waiter)).fetchHistory()).events ?? [];
      const woken = all.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'wake');
      return woken >= 0 && all.slice(woken).some((e) => e.workflowTaskCompletedEventAttributes) ? all : undefined;
    }, 'the wake handled by the chat workflow', 20_000);
    assert.ok(!events.some((e) => e.activityTaskCancelRequestedEventAttributes), 'the recheck did not cancel the waiting admission');
    assert.equal(await nextOwnTry(stack, waiter), ownTryAt, "the chat's own next try is unchanged");

    releases[0]?.();
    const dispatchedAt = await waitFor(async () => {
      const attempt = await stack.t.db('agent_attempts').where({ job_id: waiter }).whereNotNull('dispatched_run').first<{ attempt_id: string }>('attempt_id');
      return attempt ? Date.now() : undefined;
    }, 'the waiting turn dispatched by its chat workflow', 60_000);
    assert.ok(dispatchedAt < ownTryAt, `dispatched ${ownTryAt - dispatchedAt} ms before the chat's own next try would have admitted it`);

    const finished = await stack.t.db('agent_attempts').whereIn('job_id', holders).where({ state: 'completed' }).count<{ count: string }[]>('* as count').first();
    assert.equal(Number(finished?.count), 1, 'one slot freed: one of the holding turns completed');
    const claims = stack.controlLogs.lines.filter((l) => l.event === 'agent_turns_claimed');
    const waitingTurn = await stack.t.db('agent_turns').where({ job_id: waiter, seq: 1 }).first<{ turn_id: string }>('turn_id');
    assert.ok(claims.some((l) => (l.turns as string[]).includes(waitingTurn.turn_id)), 'the freed slot was claimed for the waiting turn by the finished turn (control worker)');
    await waitFor(async () => {
      const turn = await stack.t.db('agent_turns').where({ job_id: waiter, seq: 1 }).first<{ state: string }>('state');
      return turn?.state === 'completed';
    }, 'the waiting turn completed', 60_000);
    const attempts = await stack.t.db('agent_attempts').where({ job_id: waiter }).count<{ count: string }[]>('* as count').first();
    assert.equal(Number(attempts?.count), 1, 'one attempt for the waiting turn');
  });
});
