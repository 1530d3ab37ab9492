/**
 * Sandbox lifecycle rows meeting turn admission, on real PostgreSQL through the admin inventory
 * route (docs/sandboxes.md "Inventory visibility", "Archives"): new work or a running observation
 * shows a hidden sandbox again; a turn of a chat whose sandbox is being archived waits with a
 * reason its owner sees, and is admitted (restoring the archive) once the archive finished.
 */
import assert from 'node:assert/strict';
import { admitTurn, type Admission } from '../../../../agent/jobs/turn-admission';
import { jobView } from '../../../../agent/jobs/job-views';
import type { JobRow } from '../../../../agent/jobs/job-store';
import { claimSandboxAction, finishSandboxAction } from '../../../../agent/sandboxes/sandbox-actions';
import { reconcileHostInventory } from '../../../../agent/sandboxes/reconciler';
import type { SandboxActionRequest } from '../../../../workflows/definitions/sandbox-group';
import { captureLogs } from '../../../support/logs';
import { admin } from '../../../support/admin';
import { startTestApi, type TestApi } from '../../../support/api';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../../support/db';

type Entry = { group_id: string; state: string; hidden: boolean; hidden_reason: string | null };

describe('sandbox lifecycle and turn admission (PostgreSQL, admin inventory route)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let ownerId: number;
  let serial = 0;
  const HOST = 'lifecycle-host';

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    ownerId = await insertOwner(t.db, 'lifecycle-owner@example.test');
    await insertHost(t.db, HOST, { slotsTotal: 8 });
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const admit = (jobId: string, seq: number): Promise<Admission> => admitTurn(t.db, { jobId, seq }, { staleSeconds: 90, defaultSlots: 3 });
  const listed = async (state: string, groupId: string): Promise<Entry | undefined> => {
    const res = await admin<{ sandboxes: Entry[] }>(api, 'GET', `/admin/agent/sandboxes?state=${state}`);
    assert.equal(res.status, 200);
    return res.body.sandboxes.find((s) => s.group_id === groupId);
  };
  const request = (action: SandboxActionRequest['action'], containerId?: string): SandboxActionRequest =>
    ({ action, generation: 1, actor: 'admin-token', ...(containerId ? { containerId } : {}) });

  /** A chat whose first turn ran and ended, its sandbox stopped with a recorded container; its second turn is queued. */
  async function stoppedChat(): Promise<{ jobId: string; groupId: string; containerId: string }> {
    const { jobId } = await insertJobWithTurn(t.db, ownerId);
    const first = await admit(jobId, 1);
    assert.equal(first.kind, 'admitted');
    if (first.kind !== 'admitted') throw new Error('not admitted');
    serial += 1;
    const containerId = serial.toString(16).padStart(64, 'c');
    await t.db('agent_attempts').where({ attempt_id: first.attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    await t.db('agent_turns').where({ job_id: jobId, seq: 1 }).update({ state: 'completed', finished_at: t.db.fn.now() });
    await t.db('agent_sandboxes').where({ group_id: first.groupId }).update({ state: 'stopped', container_id: containerId });
    return { jobId, groupId: first.groupId, containerId };
  }
  const queueSecondTurn = (jobId: string) => t.db('agent_turns').insert({ turn_id: `${jobId}-t2`, job_id: jobId, seq: 2, state: 'queued', prompt: 'next' });

  async function hide(groupId: string): Promise<void> {
    const hidden = await claimSandboxAction(t.db, { groupId, request: request('remove_from_inventory'), staleSeconds: 90, archivesConfigured: false });
    assert.deepEqual(hidden, { kind: 'done', state: 'stopped', hidden: true });
    assert.equal(await listed('stopped', groupId), undefined, 'hidden from the default views');
    assert.equal((await listed('all', groupId))?.hidden_reason, 'stopped');
  }

  it('a new turn admitted for a chat of a sandbox removed from the inventory shows it again (audited)', async () => {
    const { jobId, groupId } = await stoppedChat();
    await hide(groupId);
    await queueSecondTurn(jobId);
    assert.equal((await admit(jobId, 2)).kind, 'admitted');
    const shown = await listed('stopped', groupId);
    assert.ok(shown, 'visible in its state\'s default view as soon as the turn is admitted');
    assert.equal(shown.hidden, false);
    assert.equal(shown.hidden_reason, null);
    const audit = await t.db('agent_audit_log').where({ target_id: groupId, action: 'agent.sandbox.restore_inventory' })
      .select<Array<{ actor_type: string; actor_name: string; outcome: string }>>('actor_type', 'actor_name', 'outcome');
    assert.deepEqual(audit, [{ actor_type: 'system', actor_name: 'turn-admission', outcome: 'succeeded' }]);
  });

  it('a stale host\'s hidden entry reappears when its chat\'s turn is admitted after the host came back', async () => {
    const staleHost = 'lifecycle-stale-host';
    await insertHost(t.db, staleHost, { slotsTotal: 8 });
    const { jobId, groupId } = await stoppedChat();
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ host_id: staleHost, state: 'running' });
    await t.db('agent_jobs').where({ job_id: jobId }).update({ host_id: staleHost });
    await insertHost(t.db, staleHost, { slotsTotal: 8, heartbeatAgeSeconds: 300 });
    const hidden = await claimSandboxAction(t.db, { groupId, request: request('remove_from_inventory'), staleSeconds: 90, archivesConfigured: false });
    assert.deepEqual(hidden, { kind: 'done', state: 'running', hidden: true });
    assert.equal(await listed('running', groupId), undefined);
    await queueSecondTurn(jobId);
    assert.deepEqual(await admit(jobId, 2), { kind: 'wait', reason: 'host_offline' });
    assert.equal((await listed('all', groupId))?.hidden_reason, 'host_stale', 'a turn that waits is no new work yet');
    await insertHost(t.db, staleHost, { slotsTotal: 8 });
    assert.equal((await admit(jobId, 2)).kind, 'admitted');
    assert.equal((await listed('running', groupId))?.hidden, false);
    await insertHost(t.db, staleHost, { slotsTotal: 8, heartbeatAgeSeconds: 300 }); // the other tests' chats go to HOST
  });

  it('a running observation of the recorded container shows a sandbox removed from the inventory while stopped again', async () => {
    const { groupId, containerId } = await stoppedChat();
    await hide(groupId);
    const report = { containers: [{ container_id: containerId, name: `sbx-${groupId}`, group_id: groupId, generation: '1', state: 'running' as const, cpu_percent: 1, memory_bytes: 1024, disk_bytes: null }] };
    const result = await reconcileHostInventory(t.db, { hostId: HOST, report, graceSeconds: 60, log: captureLogs('reconciler').log });
    assert.equal(result.observed, 1);
    assert.equal((await listed('stopped', groupId))?.hidden, false);
  });

  it('a turn of a chat whose sandbox is being archived waits (sandbox_pending, shown to the owner), then restores the archive', async () => {
    const { jobId, groupId, containerId } = await stoppedChat();
    const archive = request('archive_delete', containerId);
    const claimed = await claimSandboxAction(t.db, { groupId, request: archive, staleSeconds: 90, archivesConfigured: true });
    assert.equal(claimed.kind, 'claimed');
    assert.equal((await listed('archiving', groupId))?.state, 'archiving');
    await queueSecondTurn(jobId);

    assert.deepEqual(await admit(jobId, 2), { kind: 'wait', reason: 'sandbox_pending' });
    const view = await jobView(t.db, await t.db('agent_jobs').where({ job_id: jobId }).first<JobRow>());
    assert.equal(view.turns[1]?.state, 'queued', 'waiting is not failing');
    assert.equal(view.turns[1]?.waiting?.reason, 'sandbox_pending');
    assert.match(view.turns[1]?.waiting?.message ?? '', /archive/);
    assert.equal(await t.db('agent_attempts').where({ job_id: jobId }).count<Array<{ count: string }>>({ count: '*' }).then((r) => Number(r[0]!.count)), 1, 'no attempt was started');

    // The host uploaded and verified the archive (receipt), then removed the container: the group is cold.
    await t.db('agent_sandbox_archives').insert({
      group_id: groupId, generation: 1, object_key: `sandbox-archives/${groupId}/1.tar`, bytes: 2048, sha256: 'a'.repeat(64), verified_by: 'read',
    });
    assert.deepEqual(await finishSandboxAction(t.db, { groupId, request: archive, removal: { removed: true } }), { state: 'cold', outcome: 'completed' });

    const admitted = await admit(jobId, 2);
    assert.equal(admitted.kind, 'admitted');
    if (admitted.kind !== 'admitted') return;
    assert.equal(admitted.generation, 2, 'a new generation restores the archive');
    assert.equal(admitted.restore?.key, `sandbox-archives/${groupId}/1.tar`);
    assert.equal((await listed('restoring', groupId))?.state, 'restoring');
    const after = await jobView(t.db, await t.db('agent_jobs').where({ job_id: jobId }).first<JobRow>());
    assert.equal(after.turns[1]?.waiting, undefined, 'the reason is gone once the turn runs');
  });
});
