/**
 * Batch sandbox actions (`POST /admin/agent/sandboxes/batch`, docs/sandboxes.md "Batch actions")
 * over the real stack: PostgreSQL, the Temporal dev server (each item an update-with-start of
 * `sandbox:<groupId>`, as the single routes send it), a host runner on the real Docker engine.
 * A batch of idle groups is stopped (all 202, all reach `stopped`, one audit row each), then hidden
 * and shown again (200s), and two archived and deleted (the fs object store); a mixed batch answers each item as its single route would, in request
 * order; malformed bodies are refused whole (400 naming the field) with no item run. How many
 * deliveries run at once is counted in test/unit/api/routes/admin-sandbox-batch.test.ts.
 */
import assert from 'node:assert/strict';
import { admin as callAdmin } from '../support/admin';
import { AGENT_MODEL, docker, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';

interface Result { group_id: string; status: number; state?: string; hidden?: boolean; action?: string; error?: { type: string; message: string } }
interface Reply { status: number; body: { action?: string; results?: Result[]; error?: { message: string; param?: string | null } } }
interface Group { groupId: string; jobId: string; containerId: string; generation: number; lastActivityAt: string }

describe('sandbox batch actions (Temporal, Docker, PostgreSQL)', function () {
  this.timeout(240_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ slots: 4, env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5' } });
  });
  after(async () => {
    await stack?.close();
  });

  const admin = (method: string, path: string, body?: unknown) => callAdmin<Reply['body']>(stack.api, method, path, body);
  const batch = (body: unknown) => admin('POST', '/admin/agent/sandboxes/batch', body);

  const row = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId }).first<{ state: string; pending_action: string | null; hidden_at: Date | null }>();
  const audit = (groupId: string) => stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: groupId }).orderBy('id')
    .select<Array<{ action: string; outcome: string; actor_type: string; actor_ip: string | null; reason: string | null }>>('action', 'outcome', 'actor_type', 'actor_ip', 'reason');

  /** Chats whose first turn completed: their groups are running and idle, as the inventory lists them. */
  async function idleGroups(count: number): Promise<Group[]> {
    const jobIds = await Promise.all(Array.from({ length: count }, async (_, i) => {
      const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: `Workspace ${i}`, model: AGENT_MODEL, repo: null });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { job_id: string }).job_id;
    }));
    await waitFor(async () => {
      const states = await stack.t.db('agent_turns').whereIn('job_id', jobIds).pluck('state') as string[];
      return states.length === count && states.every((s) => s === 'completed');
    }, 'every first turn completed', 120_000);
    const listed = (await admin('GET', '/admin/agent/sandboxes?state=all')).body as unknown as { sandboxes: Array<Record<string, unknown> & { members: Array<{ job_id: string }> }> };
    return jobIds.map((jobId) => {
      const entry = listed.sandboxes.find((s) => s.members.some((m) => m.job_id === jobId));
      assert.ok(entry, `the group of ${jobId} is in the inventory`);
      return { groupId: String(entry.group_id), jobId, containerId: String(entry.container_id), generation: Number(entry.generation), lastActivityAt: String(entry.last_activity_at) };
    });
  }
  const stopItem = (g: Group) => ({ group_id: g.groupId, container_id: g.containerId, generation: g.generation, last_activity_at: g.lastActivityAt });

  it('stops a batch of idle running groups (all 202, all stopped, one audit row each), hides and shows them (200s), archives two', async () => {
    const groups = await idleGroups(5);
    const stopped = await batch({ action: 'stop', items: groups.map(stopItem) });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    assert.equal(stopped.body.action, 'stop');
    assert.deepEqual(stopped.body.results, groups.map((g) => ({ group_id: g.groupId, status: 202, action: 'stop', state: 'stop_pending', hidden: false })));
    for (const g of groups) {
      await waitFor(async () => (await row(g.groupId))?.state === 'stopped', `${g.groupId} stopped`, 60_000);
      assert.equal((await docker().getContainer(g.containerId).inspect()).State.Running, false, 'the container is stopped and kept');
      const rows = await audit(g.groupId);
      assert.deepEqual(rows.map((a) => [a.action, a.outcome, a.actor_type]), [['agent.sandbox.stop_idle', 'succeeded', 'admin_token']], 'one audit row per item');
      assert.ok(rows[0]!.actor_ip, 'the operator address is recorded');
    }

    const hidden = await batch({ action: 'remove_from_inventory', items: groups.map((g) => ({ group_id: g.groupId, generation: g.generation })) });
    assert.equal(hidden.status, 200, JSON.stringify(hidden.body));
    assert.deepEqual(hidden.body.results, groups.map((g) => ({ group_id: g.groupId, status: 200, action: 'remove_from_inventory', state: 'stopped', hidden: true })));
    const shown = await batch({ action: 'restore_to_inventory', items: groups.map((g) => ({ group_id: g.groupId, generation: g.generation })) });
    assert.deepEqual(shown.body.results?.map((r) => [r.status, r.hidden]), groups.map(() => [200, false]));
    for (const g of groups) assert.equal((await row(g.groupId))?.hidden_at, null);

    // An action the single routes gained later (archive and delete, `…/archive`) is served by the batch too.
    const archived = await batch({ action: 'archive_delete', items: groups.slice(0, 2).map((g) => ({ group_id: g.groupId, container_id: g.containerId, generation: g.generation })) });
    assert.equal(archived.status, 200, JSON.stringify(archived.body));
    assert.deepEqual(archived.body.results?.map((r) => [r.group_id, r.status, r.state]), groups.slice(0, 2).map((g) => [g.groupId, 202, 'archiving']));
    for (const g of groups.slice(0, 2)) await waitFor(async () => (await row(g.groupId))?.state === 'cold', `${g.groupId} archived and deleted`, 60_000);
  });

  it('answers a mixed batch item by item, in request order: 202, 404 unknown group, 409 wrong generation', async () => {
    const [valid, wrong] = await idleGroups(2);
    const res = await batch({
      action: 'stop',
      items: [
        { ...stopItem(wrong!), generation: wrong!.generation + 1 },
        { ...stopItem(valid!), group_id: 'grp_does_not_exist' },
        stopItem(valid!),
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const results = res.body.results ?? [];
    assert.deepEqual(results.map((r) => [r.group_id, r.status]), [[wrong!.groupId, 409], ['grp_does_not_exist', 404], [valid!.groupId, 202]]);
    assert.match(results[0]!.error?.message ?? '', /generation/);
    assert.equal(results[0]!.error?.type, 'invalid_request_error');
    assert.equal(results[1]!.error?.type, 'not_found_error');
    assert.equal(results[2]!.state, 'stop_pending');
    // The same answers as the single routes give.
    const single = await admin('POST', `/admin/agent/sandboxes/${wrong!.groupId}/stop`, { ...stopItem(wrong!), group_id: undefined, generation: wrong!.generation + 1 });
    assert.equal(single.status, 409);
    assert.equal(single.body.error?.message, results[0]!.error?.message);
    await waitFor(async () => (await row(valid!.groupId))?.state === 'stopped', 'the valid item stopped', 60_000);
    assert.equal((await row(wrong!.groupId))?.state, 'running', 'the refused item is untouched');
    assert.deepEqual((await audit(wrong!.groupId)).map((a) => [a.action, a.outcome]), [['agent.sandbox.stop_idle', 'refused'], ['agent.sandbox.stop_idle', 'refused']], 'one row for the batch item, one for the single call');
    assert.deepEqual((await audit(valid!.groupId)).map((a) => [a.action, a.outcome]), [['agent.sandbox.stop_idle', 'succeeded']]);
  });

  it('refuses malformed bodies whole with 400 naming the field, runs no item, and needs operator credentials', async () => {
    const [g] = await idleGroups(1);
    const item = stopItem(g!);
    const cases: Array<[unknown, string | null]> = [
      [{ action: 'reboot', items: [item] }, 'action'],
      [{ items: [item] }, 'action'],
      [{ action: 'stop', items: [] }, 'items'],
      [{ action: 'stop', items: Array.from({ length: 101 }, (_, i) => ({ ...item, group_id: `grp_${i}` })) }, 'items'],
      [{ action: 'stop', items: [item, { ...item }] }, 'items.1.group_id'],
      [{ action: 'stop', items: [{ ...item, last_activity_at: undefined }] }, 'items.0.last_activity_at'],
      [{ action: 'stop', items: [{ ...item, generation: 'one' }] }, 'items.0.generation'],
      [{ action: 'delete', items: [{ group_id: g!.groupId, generation: 1 }] }, 'items.0.container_id'],
      [{ action: 'remove_from_inventory', items: [{ group_id: g!.groupId, generation: 1, container_id: g!.containerId }] }, 'items.0'],
      [{ action: 'stop', items: [{ ...item, group_id: '' }] }, 'items.0.group_id'],
      [{ action: 'stop', items: [item], dry_run: true }, null],
      [{ action: 'stop', items: [{ ...item, group_id: 'grp_\u0000' }] }, 'items.0.group_id'],
      ['{"action":', null],
    ];
    for (const [body, param] of cases) {
      const res = await batch(body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
      assert.equal(res.body.error?.param ?? null, param, JSON.stringify(res.body));
    }
    assert.equal((await row(g!.groupId))?.state, 'running', 'no item ran');
    assert.deepEqual(await audit(g!.groupId), []);

    const anonymous = await fetch(`${stack.api.url}/admin/agent/sandboxes/batch`, { method: 'POST', body: JSON.stringify({ action: 'stop', items: [item] }) });
    assert.equal(anonymous.status, 401);
    assert.equal((await ownerCall(stack, 'POST', '/admin/agent/sandboxes/batch', { action: 'stop', items: [item] })).status, 403);
    assert.equal((await row(g!.groupId))?.state, 'running');
  });
});
