/**
 * Operator actions on sandbox groups (docs/sandboxes.md) over the real stack: PostgreSQL, the Temporal dev
 * server (workflow `sandbox:<groupId>`, update-with-start from the API), a host runner on the real
 * Docker engine. For each row: its condition refused (409, nothing changes), its effect (the
 * container as dockerode sees it, the group row), and the refusals every action shares: two
 * conflicting actions (one wins), wrong generation 409, unknown group 404, malformed body 400.
 */
import assert from 'node:assert/strict';
import { admin as callAdmin } from '../support/admin';
import { AGENT_MODEL, docker, ownerCall, startAgentStack, reviewedGroup, type AgentStack, type ReviewedGroup } from '../support/agent-stack';
import { insertHost, insertJobWithTurn, insertOwner } from '../support/agent-rows';
import { testLabels, testRuntime } from '../support/docker';
import { waitFor } from '../support/wait';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { sandboxGroupWorkflowId } from '../../workflows/definitions/sandbox-group';

interface Reply { status: number; body: Record<string, unknown> & { error?: { message: string; param?: string | null } } }

type Group = ReviewedGroup;

describe('sandbox group lifecycle: operator actions (Temporal, Docker, PostgreSQL)', function () {
  this.timeout(240_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5' } });
  });
  after(async () => {
    await stack?.close();
  });

  const admin = (method: string, path: string, body?: unknown) => callAdmin<Reply['body']>(stack.api, method, path, body);

  const row = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ state: string; pending_action: string | null; hidden_at: Date | null; hidden_reason: string | null; native_resume_lost_at: Date | null; container_id: string }>();
  const inspect = (containerId: string) => docker().getContainer(containerId).inspect().then((i) => i.State, (err: { statusCode?: number }) => {
    if (err.statusCode === 404) return undefined;
    throw err;
  });
  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string }>>('state')).map((r) => r.state);

  /** A chat whose first turn completed: its group is running and idle. */
  async function idleGroup(prompt = 'Make a workspace'): Promise<Group> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0] === 'completed', 'the first turn completed', 90_000);
    return reviewed(jobId);
  }

  const reviewed = (jobId: string) => reviewedGroup(stack, jobId);

  const stopBody = (g: Group) => ({ container_id: g.containerId, generation: g.generation, last_activity_at: g.lastActivityAt });
  const deleteBody = (g: Group) => ({ container_id: g.containerId, generation: g.generation });

  it('lists the inventory (default running, all, by state) without secrets, and refuses an unknown state with 400', async () => {
    const g = await idleGroup();
    const running = await admin('GET', '/admin/agent/sandboxes');
    assert.equal(running.status, 200);
    const entry = (running.body.sandboxes as Array<Record<string, unknown>>).find((s) => s.group_id === g.groupId);
    assert.ok(entry);
    assert.equal(entry.state, 'running');
    assert.equal(entry.host_id, stack.hostId);
    assert.equal(entry.execution_profile, 'untrusted-vm-v1', 'operators see each sandbox\'s profile (docs/execution-profiles.md)');
    assert.deepEqual(entry.members, [{ job_id: g.jobId, owner_id: (entry.members as Array<{ owner_id: number }>)[0]!.owner_id }]);
    assert.deepEqual(Object.keys(entry).sort(), [
      'container_id', 'container_name', 'created_at', 'execution_profile', 'generation', 'group_id', 'hidden', 'hidden_reason', 'host_id', 'host_stale', 'last_activity_at',
      'members', 'native_resume_lost', 'observation_stale', 'observed_at', 'observed_cpu_percent', 'observed_disk_bytes', 'observed_memory_bytes',
      'observed_state', 'pending_action', 'queued_turns', 'running_turns', 'state', 'updated_at',
    ]);
    assert.equal((await admin('GET', '/admin/agent/sandboxes?state=stopped')).body.sandboxes instanceof Array, true);
    assert.ok(!((await admin('GET', '/admin/agent/sandboxes?state=stopped')).body.sandboxes as Array<{ group_id: string }>).some((s) => s.group_id === g.groupId));
    const bad = await admin('GET', '/admin/agent/sandboxes?state=sleeping');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error?.param, 'state');
  });

  it('stop idle: refused on a changed review or a running turn; stops the exact container, keeps it, and a new turn resumes it', async () => {
    const g = await idleGroup('Write a file');
    const before = await row(g.groupId);
    for (const [body, reason] of [
      [{ ...stopBody(g), generation: g.generation + 1 }, /generation/],
      [{ ...stopBody(g), last_activity_at: new Date(Date.parse(g.lastActivityAt) - 1000).toISOString() }, /active at/],
      [{ ...stopBody(g), container_id: 'abcdef0123456789' }, /reviewed container/],
    ] as const) {
      const refused = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, body);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(refused.body.error?.message ?? '', reason);
    }
    assert.deepEqual(await row(g.groupId), before, 'nothing changed');
    assert.equal((await inspect(g.containerId))?.Running, true);

    const accepted = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.state, 'stop_pending');
    await waitFor(async () => (await row(g.groupId))?.state === 'stopped', 'the stop confirmed by the host', 60_000);
    const state = await inspect(g.containerId);
    assert.ok(state, 'the container is kept');
    assert.equal(state.Running, false);
    assert.equal((await row(g.groupId))?.pending_action, null);
    // Every outcome wrote one audit row (the three refusals, then the stop), oldest first.
    const audit = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: g.groupId }).orderBy('id')
      .select<Array<{ action: string; outcome: string; actor_type: string; category: string; reason: string | null; details: { state?: string } }>>('action', 'outcome', 'actor_type', 'category', 'reason', 'details');
    assert.deepEqual(audit.map((a) => [a.category, a.action, a.outcome, a.actor_type]), [
      ...Array.from({ length: 3 }, () => ['sandboxes', 'agent.sandbox.stop_idle', 'refused', 'admin_token']),
      ['sandboxes', 'agent.sandbox.stop_idle', 'succeeded', 'admin_token'],
    ]);
    assert.match(audit[0]!.reason ?? '', /generation/);
    assert.equal(audit[3]!.details.state, 'stopped');
    // Visible in the Temporal UI: the group's workflow with its host and lifecycle state.
    const handle = stack.env.client.workflow.getHandle(sandboxGroupWorkflowId(g.groupId));
    await waitFor(async () => (await handle.describe()).typedSearchAttributes.get(searchAttributes.state) === 'stopped', 'AgentState stopped', 10_000);
    assert.equal((await handle.describe()).typedSearchAttributes.get(searchAttributes.host), stack.hostId);

    // A new turn on the chat resumes the same container with its workspace.
    const turn = await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Again' });
    assert.equal(turn.status, 201);
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'completed', 'the second turn completed', 90_000);
    assert.equal((await row(g.groupId))?.state, 'running');
    assert.equal((await inspect(g.containerId))?.Running, true);
    const git = await docker().getContainer(g.containerId).exec({ Cmd: ['test', '-d', '/workspace/.git'] });
    await git.start({});
    await waitFor(async () => (await git.inspect()).Running === false, 'exec finished');
    assert.equal((await git.inspect()).ExitCode, 0, 'the workspace was kept');
  });

  it('stop idle is refused while a turn runs on the group', async () => {
    const g = await idleGroup();
    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 8; echo done' } }, { kind: 'json', content: 'slept' });
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Sleep' })).status, 201);
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'running', 'turn 2 running', 60_000);
    const now = await reviewed(g.jobId);
    const refused = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(now));
    assert.equal(refused.status, 409);
    assert.match(refused.body.error?.message ?? '', /turn is running/);
    assert.equal((await row(g.groupId))?.state, 'running');
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'completed', 'turn 2 completed', 90_000);
  });

  it('stop idle: a host that finds another incarnation of the group does not confirm; the group returns to running', async () => {
    const g = await idleGroup();
    await stack.stopHost();
    let restarted = false;
    try {
      const accepted = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g));
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      // Meanwhile the container is replaced by another generation under the same name.
      await docker().getContainer(g.containerId).remove({ force: true });
      const other = await docker().createContainer({
        name: `sbx-${g.groupId}`, Image: 'agent-sandbox:base', Cmd: ['sleep', 'infinity'],
        Labels: testLabels({ 'agent.group': g.groupId, 'agent.generation': String(g.generation + 1), 'agent.host': stack.hostId }),
        HostConfig: { Runtime: testRuntime().name, NetworkMode: 'none', Init: true },
      });
      await other.start();
      assert.equal((await row(g.groupId))?.state, 'stop_pending');
      await stack.startHost();
      restarted = true;
      await waitFor(async () => (await row(g.groupId))?.pending_action === null, 'the stop ended', 60_000);
      assert.equal((await row(g.groupId))?.state, 'running', 'not stopped without a confirmation of the exact container');
      assert.equal((await other.inspect()).State.Running, true, 'the other incarnation is untouched');
    } finally {
      if (!restarted) await stack.startHost();
    }
  });

  it('new turns wait while a stop is pending', async () => {
    const g = await idleGroup();
    await stack.t.db('agent_sandboxes').where({ group_id: g.groupId }).update({ state: 'stop_pending', pending_action: 'stop', pending_from_state: 'running' });
    assert.equal((await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Wait for the stop' })).status, 201);
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(await turnStates(g.jobId), ['completed', 'queued'], 'the turn waits while the stop is pending');
    await stack.t.db('agent_sandboxes').where({ group_id: g.groupId }).update({ state: 'running', pending_action: null, pending_from_state: null });
    await waitFor(async () => (await turnStates(g.jobId))[1] === 'completed', 'the turn ran once the stop was no longer pending', 90_000);
  });

  it('two conflicting actions: one wins, the other gets 409 with the reason', async () => {
    const g = await idleGroup();
    const [a, b] = await Promise.all([
      admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g)),
      admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g)),
    ]);
    const statuses = [a.status, b.status].sort();
    assert.deepEqual(statuses, [202, 409], JSON.stringify([a.body, b.body]));
    const loser = a.status === 409 ? a : b;
    assert.match(loser.body.error?.message ?? '', /in progress|is stop_pending|is stopped/);
    await waitFor(async () => (await row(g.groupId))?.state === 'stopped', 'the winner stopped it', 60_000);
  });

  it('delete without archive: refused while running; after a stop, removes the exact container, then marks native resume lost', async () => {
    const g = await idleGroup();
    const refused = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/delete`, deleteBody(g));
    assert.equal(refused.status, 409);
    assert.match(refused.body.error?.message ?? '', /stopped or dead/);
    assert.equal((await row(g.groupId))?.state, 'running');
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g))).status, 202);
    await waitFor(async () => (await row(g.groupId))?.state === 'stopped', 'stopped', 60_000);
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${g.groupId}/delete`, { ...deleteBody(g), generation: 7 })).status, 409, 'wrong generation');
    const accepted = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/delete`, deleteBody(g));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.state, 'deleting');
    await waitFor(async () => (await row(g.groupId))?.state === 'deleted', 'deleted', 60_000);
    assert.equal(await inspect(g.containerId), undefined, 'the container is gone');
    assert.ok((await row(g.groupId))?.native_resume_lost_at, 'native resume marked lost after the removal');
  });

  it('delete without archive of a dead group whose container vanished: the host finds nothing to remove, the group is deleted', async () => {
    const g = await idleGroup();
    await docker().getContainer(g.containerId).remove({ force: true });
    // What the reconciler records for a vanished container (test/integration/sandbox-reconciler.test.ts).
    await stack.t.db('agent_sandboxes').where({ group_id: g.groupId }).update({ state: 'dead' });
    const forced = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/force-delete`, deleteBody(g));
    assert.equal(forced.status, 409, 'force delete needs a recorded running group');
    const accepted = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/delete`, deleteBody(g));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await waitFor(async () => (await row(g.groupId))?.state === 'deleted', 'deleted', 60_000);
  });

  it('verify stopped and force delete: never stops a running container; deletes one the host sees stopped', async () => {
    const g = await idleGroup();
    const refused = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/force-delete`, deleteBody(g));
    assert.equal(refused.status, 409);
    assert.match(refused.body.error?.message ?? '', /running/);
    assert.equal((await row(g.groupId))?.state, 'running', 'back to running');
    assert.equal((await inspect(g.containerId))?.Running, true, 'still running');
    await docker().getContainer(g.containerId).stop({ t: 1 });
    const accepted = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/force-delete`, deleteBody(g));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await waitFor(async () => (await row(g.groupId))?.state === 'deleted', 'deleted', 60_000);
    assert.equal(await inspect(g.containerId), undefined);
  });

  it('remove from inventory: a stopped sandbox and a stale entry are hidden and restored; refused otherwise', async () => {
    const g = await idleGroup();
    const running = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/remove-from-inventory`, { generation: g.generation });
    assert.equal(running.status, 409);
    assert.match(running.body.error?.message ?? '', /not stale/);
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, stopBody(g))).status, 202);
    await waitFor(async () => (await row(g.groupId))?.state === 'stopped', 'stopped', 60_000);
    const hidden = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/remove-from-inventory`, { generation: g.generation });
    assert.equal(hidden.status, 200, JSON.stringify(hidden.body));
    assert.equal(hidden.body.hidden, true);
    assert.equal((await row(g.groupId))?.hidden_reason, 'stopped');
    const listed = async (state: string) => ((await admin('GET', `/admin/agent/sandboxes?state=${state}`)).body.sandboxes as Array<{ group_id: string; hidden: boolean }>).find((s) => s.group_id === g.groupId);
    assert.equal(await listed('stopped'), undefined, 'hidden from the default views');
    assert.equal((await listed('all'))?.hidden, true);
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${g.groupId}/remove-from-inventory`, { generation: g.generation })).status, 409, 'already hidden');
    const restored = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/restore-to-inventory`, { generation: g.generation });
    assert.equal(restored.status, 200);
    assert.equal((await listed('stopped'))?.hidden, false);
    assert.equal((await inspect(g.containerId))?.Running, false, 'the container is untouched');

    // A stale host's entry: refused while a turn is queued there, hidden once nothing is active.
    const staleHost = `stale-${stack.hostId}`;
    await insertHost(stack.t.db, staleHost, { heartbeatAgeSeconds: 300 });
    const ownerId = await insertOwner(stack.t.db, `stale-owner-${stack.hostId}@example.test`);
    const { jobId } = await insertJobWithTurn(stack.t.db, ownerId, staleHost);
    const groupId = `grp_stale_${Date.now()}`;
    await stack.t.db('agent_sandboxes').insert({ group_id: groupId, host_id: staleHost, container_name: `sbx-${groupId}`, container_id: 'f'.repeat(64), state: 'running' });
    await stack.t.db('agent_sandbox_members').insert({ job_id: jobId, group_id: groupId, uid: 10001 });
    const busy = await admin('POST', `/admin/agent/sandboxes/${groupId}/remove-from-inventory`, { generation: 1 });
    assert.equal(busy.status, 409);
    assert.match(busy.body.error?.message ?? '', /queued/);
    await stack.t.db('agent_turns').where({ job_id: jobId }).update({ state: 'cancelled' });
    const stale = await admin('POST', `/admin/agent/sandboxes/${groupId}/remove-from-inventory`, { generation: 1 });
    assert.equal(stale.status, 200, JSON.stringify(stale.body));
    assert.equal((await row(groupId))?.hidden_reason, 'host_stale');
    assert.equal((await admin('GET', '/admin/agent/sandboxes')).body.sandboxes instanceof Array, true);
    assert.ok(!((await admin('GET', '/admin/agent/sandboxes')).body.sandboxes as Array<{ group_id: string }>).some((s) => s.group_id === groupId));
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${groupId}/restore-to-inventory`, { generation: 1 })).status, 200);
    assert.ok(((await admin('GET', '/admin/agent/sandboxes')).body.sandboxes as Array<{ group_id: string }>).some((s) => s.group_id === groupId));
  });

  it('unknown group 404, malformed bodies 400 naming the field, operator credentials required', async () => {
    assert.equal((await admin('POST', '/admin/agent/sandboxes/grp_unknown/stop', { container_id: 'abcdef0123456789', generation: 1, last_activity_at: new Date().toISOString() })).status, 404);
    assert.equal((await admin('POST', '/admin/agent/sandboxes/grp_unknown/restore-to-inventory', { generation: 1 })).status, 404);
    const cases: Array<[string, unknown, string]> = [
      ['stop', { container_id: 'abcdef0123456789', generation: 1 }, 'last_activity_at'],
      ['stop', { container_id: 'abcdef0123456789', generation: 'one', last_activity_at: new Date().toISOString() }, 'generation'],
      ['delete', { generation: 1 }, 'container_id'],
      ['force-delete', { container_id: 'not hex!', generation: 1 }, 'container_id'],
      ['remove-from-inventory', { generation: 0 }, 'generation'],
    ];
    for (const [action, body, field] of cases) {
      const res = await admin('POST', `/admin/agent/sandboxes/grp_any/${action}`, body);
      assert.equal(res.status, 400, `${action} ${JSON.stringify(body)}`);
      assert.equal(res.body.error?.param, field);
    }
    assert.equal((await admin('POST', '/admin/agent/sandboxes/grp_any/restore-to-inventory', { generation: 1, extra: true })).status, 400);
    const anonymous = await fetch(`${stack.api.url}/admin/agent/sandboxes`);
    assert.equal(anonymous.status, 401);
    const owner = await ownerCall(stack, 'GET', '/admin/agent/sandboxes');
    assert.equal(owner.status, 403);
  });
});
