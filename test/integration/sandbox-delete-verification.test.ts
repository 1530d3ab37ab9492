/**
 * `agent_sandbox_delete_verification_failed`: the control activities of the sandbox group workflow
 * log it (WARN, ids and the reason) whenever a host cannot confirm a delete, before the removal
 * (the exact container not confirmed stopped or dead) or for the removal itself, over real
 * PostgreSQL rows; a confirmed delete, a failed stop and an archive that failed before any removal
 * log nothing of the kind.
 */
import assert from 'node:assert/strict';
import { createSandboxGroupActivities } from '../../activities/control/sandbox-group-activities';
import type { SandboxAction, SandboxState } from '../../workflows/definitions/sandbox-group';
import { insertHost } from '../support/agent-rows';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { captureLogs, type CapturedLogs } from '../support/logs';

const HOST = 'host-delete-verify';
const CONTAINER = 'c'.repeat(64);
const EVENT = 'agent_sandbox_delete_verification_failed';

describe('agent_sandbox_delete_verification_failed (PostgreSQL)', () => {
  let t: TestDatabase;
  freshDatabaseForBlock((db) => { t = db; });
  let logs: CapturedLogs;
  let activities: ReturnType<typeof createSandboxGroupActivities>;

  before(async () => {
    await insertHost(t.db, HOST);
  });
  beforeEach(() => {
    logs = captureLogs('control-activities');
    activities = createSandboxGroupActivities({ db: t.db, settings: { AGENT_HOST_STALE_SECONDS: 60 }, log: logs.log });
  });

  /** A group with `action` claimed (pending) from `stopped`, as the claim leaves it. */
  async function pendingGroup(groupId: string, action: SandboxAction, pendingState: SandboxState): Promise<void> {
    await t.db('agent_sandboxes').insert({
      group_id: groupId, host_id: HOST, container_name: `sbx-${groupId}`, container_id: CONTAINER, generation: 2,
      state: pendingState, pending_action: action, pending_from_state: 'stopped',
    });
  }
  const request = (action: SandboxAction) => ({ action, generation: 2, containerId: CONTAINER, actor: 'admin' });
  const events = () => logs.lines.filter((line) => line.event === EVENT);
  const stateOf = async (groupId: string) => (await t.db('agent_sandboxes').where({ group_id: groupId }).first<{ state: string }>('state'))?.state;

  it('is logged when the host does not confirm the removal, with the group, host and container ids and the reason', async () => {
    await pendingGroup('grp-unremoved', 'delete', 'deleting');
    const result = await activities.finishSandboxAction({
      groupId: 'grp-unremoved', request: request('delete'),
      removal: { removed: false, observation: { condition: 'running', containerId: CONTAINER, generation: '2' } },
    });
    assert.equal(result.outcome, 'failed');
    assert.equal(await stateOf('grp-unremoved'), 'stopped');
    const [line, ...more] = events();
    assert.equal(more.length, 0);
    assert.equal(line?.level, 'warn');
    assert.equal(line?.group_id, 'grp-unremoved');
    assert.equal(line?.host_id, HOST);
    assert.equal(line?.container_id, CONTAINER);
    assert.equal(line?.action, 'delete');
    assert.equal(line?.stage, 'removal');
    assert.match(String(line?.reason), /the host sees the container running/);
  });

  it('is logged when a force delete\'s host work fails', async () => {
    await pendingGroup('grp-host-failed', 'force_delete', 'deleting');
    await activities.finishSandboxAction({ groupId: 'grp-host-failed', request: request('force_delete'), error: 'The host did not carry out the action: timed out' });
    const [line] = events();
    assert.equal(line?.group_id, 'grp-host-failed');
    assert.equal(line?.stage, 'removal');
    assert.match(String(line?.reason), /timed out/);
  });

  it('is logged when the host does not confirm the container stopped before removing it', async () => {
    await pendingGroup('grp-not-stopped', 'force_delete', 'deleting');
    const reason = 'The host did not confirm the container stopped or dead: the host has no container for this sandbox';
    assert.equal(await activities.releaseSandboxAction({ groupId: 'grp-not-stopped', request: request('force_delete'), reason }), 'stopped');
    const [line] = events();
    assert.equal(line?.group_id, 'grp-not-stopped');
    assert.equal(line?.host_id, HOST);
    assert.equal(line?.container_id, CONTAINER);
    assert.equal(line?.stage, 'before_removal');
    assert.equal(line?.reason, reason);
  });

  it('is not logged for a confirmed delete, a failed stop or an archive that failed before any removal', async () => {
    await pendingGroup('grp-removed', 'delete', 'deleting');
    assert.equal((await activities.finishSandboxAction({ groupId: 'grp-removed', request: request('delete'), removal: { removed: true } })).state, 'deleted');
    await pendingGroup('grp-stop', 'stop', 'stop_pending');
    await activities.finishSandboxAction({ groupId: 'grp-stop', request: request('stop'), observation: { condition: 'missing' } });
    await pendingGroup('grp-archive', 'archive_delete', 'archiving');
    await activities.finishSandboxAction({ groupId: 'grp-archive', request: request('archive_delete'), error: 'The archive upload failed: 403' });
    assert.equal(await stateOf('grp-archive'), 'stopped');
    assert.deepEqual(events(), []);
  });
});
