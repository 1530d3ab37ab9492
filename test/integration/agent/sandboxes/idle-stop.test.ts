/**
 * The idle stop (host setting `idle_timeout_seconds`; docs/sandboxes.md "Idle stop") over the real
 * stack: the Schedule as the control worker keeps it, its workflow on the Temporal dev server, the
 * setting saved through the API, the stop carried out by `sandbox:<groupId>` on a host runner with
 * the real Docker engine, PostgreSQL for every record. The Schedule is paused after its definition
 * is checked and each run is triggered by hand, so no minute's own run interferes; idleness is
 * made by moving a group's last activity back rather than by waiting for it.
 */
import assert from 'node:assert/strict';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { ensureIdleStopSchedule } from '../../../../agent/sandboxes/idle-stop-schedule';
import { requestIdleStop } from '../../../../agent/sandboxes/idle-stop';
import type { IdleSandboxStopResult } from '../../../../workflows/definitions/idle-sandbox-stop';
import { admin } from '../../../support/admin';
import { AGENT_MODEL, docker, ownerCall, reviewedGroup, startAgentStack, type AgentStack, type ReviewedGroup } from '../../../support/agent-stack';
import { waitFor } from '../../../support/wait';

interface AuditRow { category: string; action: string; outcome: string; source: string; actor_type: string; actor_name: string | null; reason: string | null; details: Record<string, unknown> }

describe('idle stop: the Schedule, its workflow and the guarded stop (Temporal, Docker, PostgreSQL)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let scheduleId: string;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5' } });
    // What the control worker does at startup (workers/control.ts); the stack deletes the Schedule when it closes.
    scheduleId = await ensureIdleStopSchedule(stack.env.client, stack.settings);
  });
  after(async () => {
    await stack?.close();
  });

  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string }>>('state')).map((r) => r.state);
  const group = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ state: string; container_id: string; pending_action: string | null; last_activity_at: Date }>('state', 'container_id', 'pending_action', 'last_activity_at');
  const inspect = (containerId: string) => docker().getContainer(containerId).inspect().then((i) => i.State, (err: { statusCode?: number }) => {
    if (err.statusCode === 404) return undefined;
    throw err;
  });
  const audit = (groupId: string) => stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: groupId }).orderBy('id')
    .select<AuditRow[]>('category', 'action', 'outcome', 'source', 'actor_type', 'actor_name', 'reason', 'details');
  /** Moves the group's last activity `hours` back: as if it had been idle that long. */
  const idleFor = (groupId: string, hours: number) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .update({ last_activity_at: stack.t.db.raw('now() - make_interval(hours => ?)', [hours]) });
  const setIdleTimeout = async (seconds: number | null) => {
    const saved = await admin<{ settings: Record<string, { value: unknown; applies_to: string }> }>(stack.api, 'PUT', '/admin/agent/host-settings', { settings: { idle_timeout_seconds: seconds } });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.equal(saved.body.settings.idle_timeout_seconds?.applies_to, 'running_sandboxes');
  };

  /** A chat whose first turn completed: its group is running and idle. */
  async function finishedChat(prompt = 'Make a workspace'): Promise<ReviewedGroup> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0] === 'completed', 'the first turn completed', 90_000);
    return reviewedGroup(stack, jobId);
  }

  /** Triggers the Schedule once and waits for that run's result. */
  async function runOnce(): Promise<IdleSandboxStopResult> {
    const schedule = stack.env.client.schedule.getHandle(scheduleId);
    const before = (await schedule.describe()).info.numActionsTaken;
    await schedule.trigger(ScheduleOverlapPolicy.SKIP);
    const described = await waitFor(async () => {
      const d = await schedule.describe();
      return d.info.numActionsTaken > before && d;
    }, 'the triggered run started', 20_000);
    const started = described.info.recentActions.at(-1)!.action.workflow;
    return stack.env.client.workflow.getHandle<() => Promise<IdleSandboxStopResult>>(started.workflowId, started.firstExecutionRunId).result();
  }

  it('keeps one Schedule: every minute, overlap SKIP, the idle stop workflow on the control queue; a restart keeps it paused', async () => {
    assert.equal(scheduleId, stack.settings.AGENT_IDLE_STOP_SCHEDULE_ID);
    const handle = stack.env.client.schedule.getHandle(scheduleId);
    const described = await handle.describe();
    assert.deepEqual(described.spec.intervals?.map((i) => i.every), [60_000]);
    assert.equal(described.policies.overlap, ScheduleOverlapPolicy.SKIP);
    assert.equal(described.action.workflowType, 'idleSandboxStopWorkflow');
    assert.equal(described.action.taskQueue, stack.controlQueue);
    await handle.pause('paused by the idle stop test');
    await ensureIdleStopSchedule(stack.env.client, stack.settings);
    const again = await handle.describe();
    assert.equal(again.state.paused, true, 'an operator\'s pause survives the worker\'s next start');
    assert.equal(again.policies.overlap, ScheduleOverlapPolicy.SKIP);
  });

  it('stops nothing while the setting is "never" (its default)', async () => {
    const g = await finishedChat();
    await idleFor(g.groupId, 24 * 30);
    const result = await runOnce();
    assert.deepEqual(result, { idleTimeoutSeconds: null, stopped: [], refused: [], failed: [] });
    assert.equal((await group(g.groupId))?.state, 'running');
    await idleFor(g.groupId, 0);
  });

  it('stops a group idle past the timeout through the guarded stop, as the idle stopper; leaves fresh and busy groups; the next turn starts the same container again', async () => {
    const idle = await finishedChat('Write a file');
    const fresh = await finishedChat();
    const busy = await finishedChat();
    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 20; echo done' } }, { kind: 'json', content: 'slept' });
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${busy.jobId}/turns`, { prompt: 'Sleep' })).status, 201);
    await waitFor(async () => (await turnStates(busy.jobId))[1] === 'running', 'the busy chat\'s turn running', 60_000);
    await setIdleTimeout(3600);
    await idleFor(idle.groupId, 2);
    await idleFor(busy.groupId, 2);

    const result = await runOnce();
    assert.deepEqual(result, { idleTimeoutSeconds: 3600, stopped: [idle.groupId], refused: [], failed: [] });
    assert.equal((await turnStates(busy.jobId))[1], 'running', 'the busy group was busy while the run looked');
    await waitFor(async () => (await group(idle.groupId))?.state === 'stopped', 'the stop confirmed by the host', 60_000);
    const stopped = await inspect(idle.containerId);
    assert.ok(stopped, 'the container is kept');
    assert.equal(stopped.Running, false);
    assert.deepEqual((await audit(idle.groupId)).map((a) => [a.category, a.action, a.outcome, a.source, a.actor_type, a.actor_name, a.details.state]), [
      ['sandboxes', 'agent.sandbox.stop_idle', 'succeeded', 'system', 'system', 'idle-sandbox-stopper', 'stopped'],
    ]);
    for (const g of [fresh, busy]) {
      assert.equal((await group(g.groupId))?.state, 'running');
      assert.equal((await inspect(g.containerId))?.Running, true);
      assert.deepEqual(await audit(g.groupId), []);
    }

    // The owner's next turn starts the same container again, with its workspace.
    const before = (await group(idle.groupId)).last_activity_at;
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${idle.jobId}/turns`, { prompt: 'Again' })).status, 201);
    await waitFor(async () => (await turnStates(idle.jobId))[1] === 'completed', 'the turn after the stop completed', 90_000);
    const resumed = await group(idle.groupId);
    assert.equal(resumed?.state, 'running');
    assert.equal(resumed?.container_id, idle.containerId);
    assert.ok(resumed.last_activity_at > before, 'the turn is new activity');
    assert.equal((await inspect(idle.containerId))?.Running, true);
    const git = await docker().getContainer(idle.containerId).exec({ Cmd: ['test', '-d', '/workspace/.git'] });
    await git.start({});
    await waitFor(async () => (await git.inspect()).Running === false, 'exec finished');
    assert.equal((await git.inspect()).ExitCode, 0, 'the workspace was kept');
    await waitFor(async () => (await turnStates(busy.jobId))[1] === 'completed', 'the busy chat\'s turn completed', 90_000);
    await setIdleTimeout(null);
  });

  it('a stop whose group was active since it was read, or that is busy, is refused by the claim and audited as the idle stopper\'s', async () => {
    const g = await finishedChat();
    const deps = { db: stack.t.db, temporal: stack.env.client, settings: stack.settings };
    const read = { groupId: g.groupId, generation: g.generation, containerId: g.containerId };
    const stale = await requestIdleStop(deps, { ...read, lastActivityAt: new Date(Date.parse(g.lastActivityAt) - 1000).toISOString() });
    assert.equal(stale.kind, 'refused');
    assert.match(stale.kind === 'refused' ? stale.reason : '', /active at/);

    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 8; echo done' } }, { kind: 'json', content: 'slept' });
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Sleep' })).status, 201);
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'running', 'turn 2 running', 60_000);
    const busy = await requestIdleStop(deps, { ...read, lastActivityAt: (await reviewedGroup(stack, g.jobId)).lastActivityAt });
    assert.equal(busy.kind, 'refused');
    assert.match(busy.kind === 'refused' ? busy.reason : '', /turn is running/);

    assert.equal((await group(g.groupId))?.state, 'running');
    assert.deepEqual((await audit(g.groupId)).map((a) => [a.category, a.action, a.outcome, a.source, a.actor_name]), [
      ['sandboxes', 'agent.sandbox.stop_idle', 'refused', 'system', 'idle-sandbox-stopper'],
      ['sandboxes', 'agent.sandbox.stop_idle', 'refused', 'system', 'idle-sandbox-stopper'],
    ]);
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'completed', 'turn 2 completed', 90_000);
  });
});
