/**
 * The inventory reconciler over the real stack (PostgreSQL, the API, Temporal, the Docker engine):
 * the host runner's inventory reporter lists the containers labelled for this test's own host and
 * reports them; an orphan is recorded, kept through its grace period, then removed by the host
 * (exactly it: the live group's container keeps running); a group whose container is removed
 * behind its back becomes `dead`; a stale-hidden group reappears on a running observation; usage
 * accumulates with the 120 s cap; the owner usage routes answer without naming a host, container
 * id, image or generation.
 */
import assert from 'node:assert/strict';
import { createInventoryReporter, type InventoryReporter, type ReportResult } from '../../workers/host-inventory';
import { ADMIN_TOKEN } from '../support/admin';
import { AGENT_MODEL, docker, makeOwner, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRuntime } from '../support/docker';
import { captureLogs } from '../support/logs';
import { waitFor } from '../support/wait';

interface Group { groupId: string; jobId: string; containerId: string }

describe('sandbox inventory reconciler and owner usage (Docker, PostgreSQL, API, Temporal)', function () {
  this.timeout(240_000);
  let stack: AgentStack;
  let reporter: InventoryReporter;
  let live: Group;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_ORPHAN_GRACE_SECONDS: '2' } });
    reporter = createInventoryReporter({
      apiUrl: stack.api.url, hostId: stack.hostId, credential: stack.hostCredential, docker: docker(), log: captureLogs('inventory').log, diskEveryMs: 0, sandboxDiskDir: TEST_DISK_ROOT,
    });
    live = await idleGroup('Make a workspace');
  });
  after(async () => {
    reporter?.stop();
    await stack?.close();
  });

  const report = async (): Promise<Extract<ReportResult, { ok: true }>> => {
    const result = await reporter.reportOnce();
    assert.ok(result.ok, JSON.stringify(result));
    return result;
  };
  const row = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ state: string; observed_at: Date | null; observed_state: string | null; hidden_reason: string | null; updated_at: Date }>();
  const exists = (id: string) => docker().getContainer(id).inspect().then((i) => i.State.Status, (err: { statusCode?: number }) => {
    if (err.statusCode === 404) return undefined;
    throw err;
  });
  const audit = (targetId: string) => stack.t.db('agent_audit_log').where({ target_id: targetId }).orderBy('id')
    .select<Array<{ action: string; outcome: string; actor_type: string; actor_name: string | null; category: string }>>('action', 'outcome', 'actor_type', 'actor_name', 'category');
  const inventoryEntry = async (groupId: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`${stack.api.url}/admin/agent/sandboxes?state=all`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200);
    const entry = ((await res.json()) as { sandboxes: Array<Record<string, unknown>> }).sandboxes.find((s) => s.group_id === groupId);
    assert.ok(entry, `group ${groupId} is in the inventory`);
    return entry;
  };

  /** A chat whose first turn completed: its group is running with a recorded container. */
  async function idleGroup(prompt: string): Promise<Group> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await stack.t.db('agent_turns').where({ job_id: jobId, seq: 1 }).first<{ state: string }>('state'))?.state === 'completed', 'the first turn completed', 90_000);
    const job = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
    const group = await stack.t.db('agent_sandboxes').where({ group_id: job.group_id }).first<{ container_id: string }>('container_id');
    return { groupId: job.group_id, jobId, containerId: group.container_id };
  }

  /** A container labelled for this test's host, as a leftover of some group would be. */
  async function labelledContainer(labels: Record<string, string>): Promise<string> {
    const container = await docker().createContainer({
      Image: SANDBOX_IMAGE, Cmd: ['sleep', 'infinity'], HostConfig: { Runtime: testRuntime().name, NetworkMode: 'none' },
      Labels: testLabels({ 'agent.host': stack.hostId, ...labels }),
    });
    await container.start();
    return container.id;
  }

  it('observes the live container: a fresh reading in the inventory (CPU, memory, disk), not stale', async () => {
    const first = await report();
    assert.ok(first.answer.observed >= 1);
    assert.deepEqual(first.answer.remove, []);
    const entry = await inventoryEntry(live.groupId);
    assert.equal(entry.observed_state, 'running');
    assert.equal(entry.observation_stale, false);
    assert.equal(typeof entry.observed_at, 'string');
    assert.ok(typeof entry.observed_memory_bytes === 'number' && entry.observed_memory_bytes > 0, JSON.stringify(entry));
    assert.ok(typeof entry.observed_cpu_percent === 'number' && entry.observed_cpu_percent >= 0);
    assert.ok(typeof entry.observed_disk_bytes === 'number' && entry.observed_disk_bytes >= 0);

    // A reading older than 90 s is stale.
    await stack.t.db('agent_sandboxes').where({ group_id: live.groupId }).update({ observed_at: stack.t.db.raw(`now() - interval '91 seconds'`) });
    assert.equal((await inventoryEntry(live.groupId)).observation_stale, true);
    await report();
    assert.equal((await inventoryEntry(live.groupId)).observation_stale, false);
  });

  it('records orphans, keeps them through the grace period, then the host removes exactly them; the live container keeps running', async () => {
    const noGroup = await labelledContainer({ 'agent.group': `grp_gone_${Date.now()}`, 'agent.generation': '1' });
    // Labelled with the live group but not its recorded container: an orphan too.
    const otherIncarnation = await labelledContainer({ 'agent.group': live.groupId, 'agent.generation': '7' });
    // A container of another host is never listed nor touched.
    const otherHost = (await docker().createContainer({
      Image: SANDBOX_IMAGE, Cmd: ['sleep', 'infinity'], HostConfig: { Runtime: testRuntime().name, NetworkMode: 'none' }, Labels: testLabels({ 'agent.host': `${stack.hostId}-other` }),
    })).id;

    const first = await report();
    assert.deepEqual(first.answer.remove, [], 'in their grace period');
    assert.equal(first.answer.orphans, 2);
    const recorded = await stack.t.db('agent_sandbox_orphans').where({ host_id: stack.hostId }).orderBy('container_id')
      .select<Array<{ container_id: string; reason: string; first_seen_at: Date; removed_at: Date | null }>>('container_id', 'reason', 'first_seen_at', 'removed_at');
    assert.deepEqual(recorded.map((o) => [o.container_id, o.reason, o.removed_at]).sort(), [
      [noGroup, 'no_group', null], [otherIncarnation, 'other_container', null],
    ].sort());
    const found = stack.api.logs.lines.filter((l) => l.event === 'agent_sandbox_orphan_found').map((l) => l.container_id);
    assert.ok(found.includes(noGroup) && found.includes(otherIncarnation), 'each orphan is logged when found');

    const removing = await waitFor(async () => {
      const r = await report();
      return r.answer.remove.length > 0 && r;
    }, 'the removal order after the grace period', 30_000);
    assert.deepEqual([...removing.answer.remove].sort(), [noGroup, otherIncarnation].sort());
    assert.deepEqual(removing.removals, { [noGroup]: 'removed', [otherIncarnation]: 'removed' });
    assert.equal(await exists(noGroup), undefined);
    assert.equal(await exists(otherIncarnation), undefined);
    assert.equal(await exists(live.containerId), 'running', 'the live container is never removed');
    assert.equal(await exists(otherHost), 'created', 'another host\'s container is untouched');
    await docker().getContainer(otherHost).remove({ force: true });

    const after = await report();
    assert.deepEqual(after.answer.remove, []);
    assert.equal(after.answer.orphans, 0);
    const closed = await stack.t.db('agent_sandbox_orphans').where({ host_id: stack.hostId }).whereNotNull('removed_at').pluck<string[]>('container_id');
    assert.deepEqual(closed.sort(), [noGroup, otherIncarnation].sort());
    for (const id of [noGroup, otherIncarnation]) {
      assert.deepEqual((await audit(id)).map((a) => [a.category, a.action, a.outcome, a.actor_type, a.actor_name]), [
        ['sandboxes', 'agent.sandbox.orphan_remove', 'requested', 'system', 'sandbox-reconciler'],
        ['sandboxes', 'agent.sandbox.orphan_remove', 'succeeded', 'system', 'sandbox-reconciler'],
      ]);
    }
    assert.equal((await row(live.groupId))?.state, 'running');
  });

  it('marks a group dead when its container is removed behind its back (once the row has settled)', async () => {
    const g = await idleGroup('Another workspace');
    await docker().getContainer(g.containerId).remove({ force: true });
    // Just recorded: the listing may predate a container recorded meanwhile, so this report waits.
    const early = await report();
    assert.equal(early.answer.marked_dead, 0);
    assert.equal((await row(g.groupId))?.state, 'running');

    // A minute later (the row's last change moved back instead of waiting).
    await stack.t.db('agent_sandboxes').where({ group_id: g.groupId }).update({ updated_at: stack.t.db.raw(`now() - interval '2 minutes'`) });
    const next = await report();
    assert.equal(next.answer.marked_dead, 1);
    assert.equal((await row(g.groupId))?.state, 'dead');
    assert.equal((await inventoryEntry(g.groupId)).state, 'dead');
    assert.deepEqual((await audit(g.groupId)).map((a) => [a.action, a.outcome, a.actor_name]), [['agent.sandbox.mark_dead', 'succeeded', 'sandbox-reconciler']]);
    assert.ok(stack.api.logs.lines.some((l) => l.event === 'agent_sandbox_container_vanished' && l.group_id === g.groupId));
    assert.equal((await report()).answer.marked_dead, 0, 'marked once');
    assert.equal(await exists(live.containerId), 'running');
  });

  it('leaves a group with a pending action alone, and shows a stale-hidden group again on a running observation', async () => {
    await stack.t.db('agent_sandboxes').where({ group_id: live.groupId })
      .update({ hidden_at: stack.t.db.fn.now(), hidden_reason: 'host_stale', updated_at: stack.t.db.raw(`now() - interval '2 minutes'`) });
    await report();
    const shown = await row(live.groupId);
    assert.equal(shown?.hidden_reason, null);
    assert.equal((await inventoryEntry(live.groupId)).hidden, false);
    assert.deepEqual((await audit(live.groupId)).map((a) => [a.action, a.actor_name]), [['agent.sandbox.restore_inventory', 'sandbox-reconciler']]);

    const g = await idleGroup('A third workspace');
    await stack.t.db('agent_sandboxes').where({ group_id: g.groupId })
      .update({ state: 'stop_pending', pending_action: 'stop', pending_from_state: 'running', updated_at: stack.t.db.raw(`now() - interval '2 minutes'`) });
    await docker().getContainer(g.containerId).remove({ force: true });
    assert.equal((await report()).answer.marked_dead, 0);
    assert.equal((await row(g.groupId))?.state, 'stop_pending', 'the pending stop decides');
  });

  it('accumulates running time per UTC day, a silent gap counting at most 120 s', async () => {
    const today = async () => Number((await stack.t.db('agent_sandbox_usage_daily').where({ group_id: live.groupId })
      .where('day', stack.t.db.raw(`(now() at time zone 'utc')::date`)).first<{ running_seconds: number } | undefined>('running_seconds'))?.running_seconds ?? 0);
    const before = await today();
    assert.ok(before > 0, 'consecutive running readings counted');
    // The host was silent for ten minutes (its last reading moved back): only 120 s count.
    // (Run near midnight, the 120 s may straddle it: the sum over both days is what is checked.)
    await stack.t.db('agent_sandboxes').where({ group_id: live.groupId }).update({ observed_at: stack.t.db.raw(`now() - interval '10 minutes'`) });
    const sum = async () => Number((await stack.t.db('agent_sandbox_usage_daily').where({ group_id: live.groupId }).sum<Array<{ sum: number }>>('running_seconds as sum'))[0]!.sum);
    const total = await sum();
    await report();
    assert.equal(Math.round((await sum()) - total), 120);
    const owner = await stack.t.db('agent_sandbox_usage_daily').where({ group_id: live.groupId }).first<{ owner_id: string }>('owner_id');
    const job = await stack.t.db('agent_jobs').where({ job_id: live.jobId }).first<{ owner_id: string }>('owner_id');
    assert.equal(owner.owner_id, job.owner_id);
  });

  it('owner usage routes: containers and daily usage, never a host, container id, image or generation; 400 for other windows', async () => {
    const res = await ownerCall(stack, 'GET', '/v1/agent/usage/containers');
    assert.equal(res.status, 200);
    const text = await res.text();
    const body = JSON.parse(text) as { days: number; containers: Array<Record<string, unknown>> };
    assert.equal(body.days, 7);
    const entry = body.containers.find((c) => c.job_id === live.jobId);
    assert.ok(entry, text);
    assert.deepEqual(Object.keys(entry).sort(), ['created_at', 'job_id', 'job_ids', 'last_activity_at', 'resources', 'running_seconds', 'state', 'title']);
    assert.deepEqual(Object.keys(entry.resources as object).sort(), ['cpu_percent', 'disk_bytes', 'memory_bytes', 'observed_at', 'stale']);
    assert.equal(entry.state, 'running');
    assert.ok((entry.running_seconds as number) >= 120);
    assert.ok(!body.containers.some((c) => c.state === 'deleted'));

    const daily = await ownerCall(stack, 'GET', '/v1/agent/usage/containers/daily?days=7');
    assert.equal(daily.status, 200);
    const dailyText = await daily.text();
    const usage = JSON.parse(dailyText) as { days: number; from: string; to: string; daily: Array<{ day: string; running_seconds: number; running_hours: number }>; total_running_seconds: number };
    assert.equal(usage.daily.length, 7);
    assert.equal(usage.from, usage.daily[0]!.day);
    assert.equal(usage.to, usage.daily[6]!.day);
    for (let i = 1; i < 7; i++) assert.equal(Date.parse(usage.daily[i]!.day) - Date.parse(usage.daily[i - 1]!.day), 86_400_000, 'consecutive UTC days');
    assert.ok(usage.total_running_seconds >= 120);
    assert.equal((JSON.parse(await (await ownerCall(stack, 'GET', '/v1/agent/usage/containers/daily?days=30')).text()) as { daily: unknown[] }).daily.length, 30);

    const { hostId } = stack;
    for (const json of [text, dailyText]) {
      for (const forbidden of [live.containerId, live.containerId.slice(0, 12), hostId, SANDBOX_IMAGE, 'generation', 'host', 'container_id', 'image']) {
        assert.ok(!json.includes(forbidden), `the owner's usage does not name ${forbidden}`);
      }
    }

    for (const path of ['/v1/agent/usage/containers', '/v1/agent/usage/containers/daily']) {
      for (const query of ['days=8', 'days=', 'days=7&days=7', 'days=seven', 'days=07']) {
        const bad = await ownerCall(stack, 'GET', `${path}?${query}`);
        assert.equal(bad.status, 400, `${path}?${query}`);
        assert.equal(((await bad.json()) as { error: { param?: string } }).error.param, 'days');
      }
    }
  });

  it('an owner with nothing gets empty lists and a window of zeros', async () => {
    const key = await makeOwner(stack.gateway.url, stack.t, `nothing-${stack.hostId}@example.com`);
    const containers = await ownerCall(stack, 'GET', '/v1/agent/usage/containers?days=30', undefined, key);
    assert.equal(containers.status, 200);
    assert.deepEqual(await containers.json(), { days: 30, containers: [] });
    const daily = await ownerCall(stack, 'GET', '/v1/agent/usage/containers/daily', undefined, key);
    assert.equal(daily.status, 200);
    const usage = (await daily.json()) as { days: number; daily: Array<{ running_seconds: number; running_hours: number }>; total_running_seconds: number };
    assert.equal(usage.days, 7);
    assert.deepEqual(usage.daily.map((d) => [d.running_seconds, d.running_hours]), Array.from({ length: 7 }, () => [0, 0]));
    assert.equal(usage.total_running_seconds, 0);
    assert.equal((await ownerCall(stack, 'GET', '/v1/agent/usage/containers/daily', undefined, 'wrong-key')).status, 401);
  });
});
