/**
 * Chat deletion and the deletion sweep (docs/chat-deletion.md) over the
 * real stack: the owner routes on the API, the sweep's Temporal Schedule (created by the control
 * worker's own startup call) and workflow on the Temporal dev server, the sandbox group workflow's
 * stop and delete on a host runner with the real Docker engine, PostgreSQL for every record.
 */
import assert from 'node:assert/strict';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { claimDueDeletion } from '../../agent/deletion/deletion-requests';
import { ensureDeletionSweepSchedule } from '../../agent/deletion/sweep-schedule';
import { newId } from '../../agent/jobs/job-store';
import type { DeletionSweepResult } from '../../workflows/definitions/deletion-sweep';
import { AGENT_MODEL, docker, makeOwner, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface Reply { status: number; body: Record<string, unknown> & { error?: { message: string; param?: string | null } } }

interface RequestRow { id: string; state: string; attempts: number; last_error: string | null; purged_at: Date | null; retry_delay_seconds: number | null }

interface AuditRow { category: string; action: string; outcome: string; source: string; actor_type: string; actor_name: string | null; reason: string | null; details: Record<string, unknown> }

describe('chat deletion and the deletion sweep (API, Temporal Schedule, Docker, PostgreSQL)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let scheduleId: string;
  let otherKey: string;
  let ownerId: number;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5' } });
    // What the control worker does at startup (workers/control.ts), twice: the second call updates.
    // The stack's Schedule id is its own (test/support/agent-stack.ts), deleted when it closes.
    scheduleId = await ensureDeletionSweepSchedule(stack.env.client, stack.settings);
    await ensureDeletionSweepSchedule(stack.env.client, stack.settings);
    otherKey = await makeOwner(stack.gateway.url, stack.t, `other-${stack.hostId}@example.com`);
    ownerId = Number((await stack.t.db('users').whereRaw('lower(email) = lower(?)', [`owner-${stack.hostId}@example.com`]).first<{ id: string }>('id')).id);
  });
  after(async () => {
    await stack?.close();
  });

  async function call(method: string, path: string, body?: unknown, key?: string): Promise<Reply> {
    const res = await ownerCall(stack, method, path, body, key);
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Reply['body'] };
  }

  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string }>>('state')).map((r) => r.state);
  const request = (jobId: string) => stack.t.db('agent_deletion_requests').where({ job_id: jobId })
    .first<RequestRow | undefined>('id', 'state', 'attempts', 'last_error', 'purged_at',
      stack.t.db.raw('extract(epoch from next_attempt_at - updated_at)::int as retry_delay_seconds'));
  const group = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ state: string; container_id: string; native_resume_lost_at: Date | null } | undefined>('state', 'container_id', 'native_resume_lost_at');
  const container = (containerId: string) => docker().getContainer(containerId).inspect().then((i) => i.State, (err: { statusCode?: number }) => {
    if (err.statusCode === 404) return undefined;
    throw err;
  });
  const audit = (targetType: string, targetId: string) => stack.t.db('agent_audit_log').where({ target_type: targetType, target_id: targetId }).orderBy('id')
    .select<AuditRow[]>('category', 'action', 'outcome', 'source', 'actor_type', 'actor_name', 'reason', 'details');
  /** Rows of the chat left in each table the purge empties. */
  const chatRows = async (jobId: string) => {
    const counts: Record<string, number> = {};
    for (const table of ['agent_events', 'agent_attempts', 'agent_turns', 'agent_grants', 'agent_sandbox_members', 'agent_jobs']) {
      counts[table] = (await stack.t.db(table).where({ job_id: jobId })).length;
    }
    return counts;
  };
  const none = { agent_events: 0, agent_attempts: 0, agent_turns: 0, agent_grants: 0, agent_sandbox_members: 0, agent_jobs: 0 };

  /** A chat whose first turn completed: its group is running and idle. */
  async function finishedChat(prompt = 'Make a workspace'): Promise<{ jobId: string; groupId: string; containerId: string }> {
    const created = await call('POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const jobId = String(created.body.job_id);
    await waitFor(async () => (await turnStates(jobId))[0] === 'completed', 'the first turn completed', 90_000);
    const { group_id: groupId } = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
    const row = await group(groupId);
    assert.equal(row?.state, 'running');
    return { jobId, groupId, containerId: row.container_id };
  }

  async function deletePermanently(jobId: string): Promise<string> {
    assert.equal((await call('DELETE', `/v1/agent/jobs/${jobId}`)).status, 200);
    const requested = await call('DELETE', `/v1/agent/jobs/${jobId}?permanent=true`);
    assert.equal(requested.status, 202, JSON.stringify(requested.body));
    return String((requested.body.permanent_deletion as { request_id: string }).request_id);
  }

  /** Triggers the Schedule once and waits for that sweep run's end. */
  async function sweepOnce(): Promise<DeletionSweepResult> {
    const schedule = stack.env.client.schedule.getHandle(scheduleId);
    const before = (await schedule.describe()).info.numActionsTaken;
    await schedule.trigger();
    const described = await waitFor(async () => {
      const d = await schedule.describe();
      return d.info.numActionsTaken > before && d.info.recentActions.length > 0 && d;
    }, 'the triggered sweep started', 20_000);
    const started = described.info.recentActions.at(-1)!.action.workflow;
    return stack.env.client.workflow.getHandle<() => Promise<DeletionSweepResult>>(started.workflowId, started.firstExecutionRunId).result();
  }

  it('keeps one Schedule: every minute, overlap SKIP, the sweep workflow on the control queue', async () => {
    assert.equal(scheduleId, stack.settings.AGENT_DELETION_SWEEP_SCHEDULE_ID);
    const described = await stack.env.client.schedule.getHandle(scheduleId).describe();
    assert.deepEqual(described.spec.intervals?.map((i) => i.every), [60_000]);
    assert.equal(described.policies.overlap, ScheduleOverlapPolicy.SKIP);
    assert.equal(described.action.workflowType, 'deletionSweepWorkflow');
    assert.equal(described.action.taskQueue, stack.controlQueue);
  });

  it('soft delete hides the chat everywhere, refuses new turns and stops the running turn; restore brings it back', async () => {
    const chat = await finishedChat();
    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 300' } });
    assert.equal((await call('POST', `/v1/agent/jobs/${chat.jobId}/turns`, { prompt: 'Sleep for long' })).status, 201);
    await waitFor(async () => (await turnStates(chat.jobId))[1] === 'running', 'turn 2 running', 60_000);
    await waitFor(() => stack.upstream.requests.some((r) => JSON.stringify(r.body).includes('Sleep for long')), 'the model was asked', 60_000);

    assert.equal((await call('DELETE', `/v1/agent/jobs/${chat.jobId}`, undefined, otherKey)).status, 404, "another owner's chat");
    const deleted = await call('DELETE', `/v1/agent/jobs/${chat.jobId}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(deleted.body.stopping_turn, 2);
    await waitFor(async () => (await turnStates(chat.jobId))[1] === 'cancelled', 'the running turn cancelled', 60_000);

    assert.equal((await call('GET', `/v1/agent/jobs/${chat.jobId}`)).status, 404);
    for (const list of ['/v1/agent/jobs', '/v1/agent/conversations', '/v1/agent/sessions']) {
      const listed = await call('GET', list);
      assert.ok(!(listed.body.jobs as Array<{ job_id: string }>).some((j) => j.job_id === chat.jobId), `${list} hides it`);
    }
    assert.equal((await call('POST', `/v1/agent/jobs/${chat.jobId}/turns`, { prompt: 'Again' })).status, 404, 'no new turn');
    assert.equal((await call('GET', `/v1/agent/jobs/${chat.jobId}/workspace/archive`)).status, 404, 'no workspace download');
    assert.deepEqual(await turnStates(chat.jobId), ['completed', 'cancelled']);
    const again = await call('DELETE', `/v1/agent/jobs/${chat.jobId}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.deleted_at, deleted.body.deleted_at, 'a repeat changes nothing');
    assert.equal((await group(chat.groupId))?.state, 'running', 'a soft delete leaves the sandbox alone');

    assert.equal((await call('POST', `/v1/agent/jobs/${chat.jobId}/restore`, {}, otherKey)).status, 404);
    const restored = await call('POST', `/v1/agent/jobs/${chat.jobId}/restore`);
    assert.equal(restored.status, 200, JSON.stringify(restored.body));
    assert.equal(restored.body.job_id, chat.jobId);
    assert.ok(((await call('GET', '/v1/agent/jobs')).body.jobs as Array<{ job_id: string }>).some((j) => j.job_id === chat.jobId));
    assert.equal((await call('POST', `/v1/agent/jobs/${chat.jobId}/restore`)).status, 409, 'not deleted any more');
    assert.equal((await call('POST', `/v1/agent/jobs/${chat.jobId}/turns`, { prompt: 'Back again' })).status, 201);
    await waitFor(async () => (await turnStates(chat.jobId))[2] === 'completed', 'a turn after the restore ran', 90_000);
  });

  it('permanent deletion needs a soft-deleted chat of the owner (409 / 404 / 400); it is idempotent and cannot be restored', async () => {
    const chat = await finishedChat();
    const refused = await call('DELETE', `/v1/agent/jobs/${chat.jobId}?permanent=true`);
    assert.equal(refused.status, 409);
    assert.match(refused.body.error?.message ?? '', /delete it first/);
    assert.equal((await call('DELETE', `/v1/agent/jobs/${newId('job')}?permanent=true`)).status, 404, 'unknown chat');
    assert.equal((await call('DELETE', `/v1/agent/jobs/${chat.jobId}?permanent=true`, undefined, otherKey)).status, 404, "another owner's chat");
    const bad = await call('DELETE', `/v1/agent/jobs/${chat.jobId}?permanent=yes`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error?.param, 'permanent');
    assert.equal((await call('DELETE', `/v1/agent/jobs/${chat.jobId}?forever=true`)).status, 400);
    assert.equal(await request(chat.jobId), undefined, 'nothing requested');

    const requestId = await deletePermanently(chat.jobId);
    const repeat = await call('DELETE', `/v1/agent/jobs/${chat.jobId}?permanent=true`);
    assert.equal(repeat.status, 200);
    assert.equal((repeat.body.permanent_deletion as { request_id: string }).request_id, requestId);
    const restore = await call('POST', `/v1/agent/jobs/${chat.jobId}/restore`);
    assert.equal(restore.status, 409);
    assert.match(restore.body.error?.message ?? '', /cannot be restored/);

    // The Schedule's own minute (no trigger) carries it out: the chat was its group's last member.
    await waitFor(async () => (await request(chat.jobId))?.state === 'done', 'the sweep of the next minute finished the request', 100_000);
    assert.deepEqual(await chatRows(chat.jobId), none, "the chat's records are gone");
    assert.equal(await container(chat.containerId), undefined, 'the container was removed');
    const row = await group(chat.groupId);
    assert.equal(row?.state, 'deleted');
    assert.ok(row?.native_resume_lost_at);
    assert.equal((await call('GET', `/v1/agent/jobs/${chat.jobId}`)).status, 404);
    assert.equal((await call('DELETE', `/v1/agent/jobs/${chat.jobId}?permanent=true`)).status, 404, 'nothing left to delete');

    // Audit: every step as the sweeper (source system, category deletion), the sandbox actions included.
    const chatAudit = await audit('chat', chat.jobId);
    assert.deepEqual(chatAudit.map((a) => [a.category, a.action, a.outcome, a.source, a.actor_type, a.actor_name]), [
      ['deletion', 'agent.chat.purged', 'succeeded', 'system', 'system', 'user-deletion-sweeper'],
      ['deletion', 'agent.chat.deletion_completed', 'succeeded', 'system', 'system', 'user-deletion-sweeper'],
    ]);
    assert.equal((chatAudit[0]!.details.deleted_rows as Record<string, number>).agent_jobs, 1);
    assert.equal(chatAudit[1]!.details.sandbox, 'deleted');
    const sandboxAudit = await audit('sandbox', chat.groupId);
    assert.deepEqual(sandboxAudit.map((a) => [a.category, a.action, a.outcome, a.source, a.actor_name]), [
      ['deletion', 'agent.sandbox.stop_idle', 'succeeded', 'system', 'user-deletion-sweeper'],
      ['deletion', 'agent.sandbox.delete', 'succeeded', 'system', 'user-deletion-sweeper'],
    ]);
  });

  it('a group with another member left keeps running; deleting that member too ends the group', async () => {
    const chat = await finishedChat();
    // A second member of the same group (as a fork would be), owned by the same owner.
    const forkId = newId('job');
    await stack.t.db('agent_jobs').insert({ job_id: forkId, owner_id: ownerId, title: 'fork', model: AGENT_MODEL, host_id: stack.hostId, group_id: chat.groupId });
    await stack.t.db('agent_sandbox_members').insert({ job_id: forkId, group_id: chat.groupId, uid: 10002 });

    await deletePermanently(chat.jobId);
    await sweepOnce();
    assert.equal((await request(chat.jobId))?.state, 'done');
    assert.deepEqual(await chatRows(chat.jobId), none);
    assert.equal((await group(chat.groupId))?.state, 'running', 'the group stays for its other member');
    assert.equal((await container(chat.containerId))?.Running, true, 'its container keeps running');
    assert.equal((await audit('chat', chat.jobId)).at(-1)?.details.sandbox, 'kept');
    assert.deepEqual(await audit('sandbox', chat.groupId), [], 'no sandbox action');

    await deletePermanently(forkId);
    await sweepOnce();
    assert.equal((await request(forkId))?.state, 'done');
    assert.equal((await group(chat.groupId))?.state, 'deleted', 'the last member took the group with it');
    assert.equal(await container(chat.containerId), undefined);
  });

  it('a failed attempt (host offline) is retried a minute later, and succeeds once the host is back', async () => {
    const chat = await finishedChat();
    stack.heartbeat.stop();
    let beating = false;
    try {
      await stack.t.db('agent_hosts').where({ host_id: stack.hostId }).update({ last_heartbeat_at: stack.t.db.raw(`now() - interval '10 minutes'`) });
      await deletePermanently(chat.jobId);
      await sweepOnce();
      const failed = await request(chat.jobId);
      assert.equal(failed?.state, 'failed');
      assert.equal(failed.attempts, 1);
      assert.match(failed.last_error ?? '', /host is offline/);
      assert.equal(failed.retry_delay_seconds, 60, 'next_attempt_at is a minute after the failure');
      assert.ok(failed.purged_at, "the chat's records are purged already");
      assert.deepEqual(await chatRows(chat.jobId), none);
      assert.equal((await container(chat.containerId))?.Running, true, 'nothing was done to the sandbox of the offline host');
      const failure = (await audit('chat', chat.jobId)).at(-1)!;
      assert.deepEqual([failure.action, failure.outcome, failure.actor_name], ['agent.chat.deletion_attempt', 'failed', 'user-deletion-sweeper']);
      assert.match(failure.reason ?? '', /host is offline/);

      await sweepOnce();
      assert.equal((await request(chat.jobId))?.attempts, 1, 'not tried again before next_attempt_at');

      await stack.heartbeat.beatOnce();
      stack.heartbeat.start(1000);
      beating = true;
      // The minute passes.
      await stack.t.db('agent_deletion_requests').where({ job_id: chat.jobId }).update({ next_attempt_at: stack.t.db.fn.now() });
      await sweepOnce();
      await waitFor(async () => (await request(chat.jobId))?.state === 'done', 'the retry finished the request', 30_000);
      assert.equal((await request(chat.jobId))?.attempts, 2);
      assert.equal((await group(chat.groupId))?.state, 'deleted');
      assert.equal(await container(chat.containerId), undefined);
    } finally {
      if (!beating) {
        await stack.heartbeat.beatOnce();
        stack.heartbeat.start(1000);
      }
    }
  });

  it('a request left running by a sweep that died is taken again once its lease expires', async () => {
    const schedule = stack.env.client.schedule.getHandle(scheduleId);
    // No sweep of the Schedule's own minute may claim it before the dying one does.
    await schedule.pause('test: a sweep dies mid-request');
    try {
      const jobId = newId('job');
      await stack.t.db('agent_jobs').insert({ job_id: jobId, owner_id: ownerId, title: 'never ran', model: AGENT_MODEL });
      await deletePermanently(jobId);
      // A sweep claims it with a short lease and dies before doing anything.
      const claimed = await claimDueDeletion(stack.t.db, { leaseSeconds: 3 });
      assert.equal(claimed?.jobId, jobId);
      assert.equal((await request(jobId))?.state, 'running');

      await sweepOnce();
      assert.deepEqual([(await request(jobId))?.state, (await request(jobId))?.attempts], ['running', 1], 'a live lease is left alone');

      await waitFor(async () => (await stack.t.db('agent_deletion_requests').where({ job_id: jobId }).where('lease_expires_at', '<=', stack.t.db.fn.now()).first('id')) !== undefined, 'the lease expired', 10_000);
      const swept = await sweepOnce();
      assert.deepEqual(swept.done, [claimed.requestId]);
      assert.equal((await request(jobId))?.state, 'done');
      assert.equal((await request(jobId))?.attempts, 2);
      assert.deepEqual(await chatRows(jobId), none);
      const rows = await audit('chat', jobId);
      assert.deepEqual(rows.map((a) => [a.action, a.outcome]), [
        ['agent.chat.deletion_attempt', 'failed'], ['agent.chat.purged', 'succeeded'], ['agent.chat.deletion_completed', 'succeeded'],
      ]);
      assert.match(rows[0]!.reason ?? '', /lease/);
      assert.equal(rows[2]!.details.sandbox, 'none');
    } finally {
      await schedule.unpause();
    }
  });
});
