/**
 * Releasing server allocations over the real API, PostgreSQL and Temporal (`DELETE
 * /admin/agent/servers/<allocation_id>` `{expected_revision: N}`; docs/agent-hosts.md "Server
 * allocations"): the host goes through its workflow's guarded removal, run by a control worker on
 * the test's own task queue. An idle host is removed and the allocation released at once (200);
 * a busy host drains and the allocation is `releasing` (202) until the drain's last step releases
 * it; two concurrent releases naming one revision: one wins, the other is 409; a release whose
 * host action failed (503) is repaired by sending it again; the audit rows of each step. Host ids
 * carry this run's suffix: the Temporal dev server is shared, and `host:<hostId>` names one host.
 */
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { enrollHost } from '../../../../agent/hosts/host-registry';
import type { AllocationView } from '../../../../agent/servers/server-allocations';
import { admin, type AdminResponse } from '../../../support/admin';
import { insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { endHostWorkflows, hostWorkflowState, startHostWorker, uniqueHostId } from '../../../support/host-workflows';
import { temporalEnv, uniqueTaskQueue } from '../../../support/temporal';
import { waitFor } from '../../../support/wait';

/** The error message of an answer. */
const messageOf = (res: { body: unknown }): string => (res.body as { error: { message: string } }).error.message;

interface AuditRow { action: string; actor_type: string; outcome: string; reason: string | null; details: Record<string, unknown> }

describe('admin: releasing server allocations through the host workflow (Temporal, PostgreSQL)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let env: TestWorkflowEnvironment;
  let api: TestApi;
  let worker: { close(): Promise<void> };
  let ownerId: number;
  const hosts = new Set<string>();

  before(async () => {
    t = await freshDatabase();
    env = await temporalEnv();
    const queue = uniqueTaskQueue('servers-release');
    api = await startTestApi({ db: t.db, temporal: env.client, env: { TEMPORAL_CONTROL_TASK_QUEUE: queue, AGENT_HOST_DRAIN_CHECK_SECONDS: '1' } });
    worker = await startHostWorker(env, t.db, queue);
    ownerId = await insertOwner(t.db, 'servers-release-owner@example.test');
  });
  after(async () => {
    if (env) await endHostWorkflows(env.client, hosts);
    await worker?.close();
    await api?.close();
    await t?.drop();
  });

  const release = (id: string, revision: unknown): Promise<AdminResponse<AllocationView>> => admin<AllocationView>(api, 'DELETE', `/admin/agent/servers/${id}`, { expected_revision: revision });
  const show = async (id: string) => (await admin<AllocationView>(api, 'GET', `/admin/agent/servers/${id}`)).body;
  const auditOf = (id: string) => t.db('agent_audit_log').where({ category: 'servers', target_type: 'server_allocation', target_id: id }).orderBy('id') as Promise<AuditRow[]>;
  const hostRow = (hostId: string) => t.db('agent_hosts').where({ host_id: hostId }).first<{ removed_at: Date | null; removal_requested_at: Date | null } | undefined>();
  /** An enrolled host (unique id) with an active allocation. */
  async function allocatedHost(prefix: string): Promise<{ hostId: string; credential: string; view: AllocationView }> {
    const hostId = uniqueHostId(prefix);
    hosts.add(hostId);
    const { credential } = await enrollHost(t.db, hostId);
    const created = await admin<AllocationView>(api, 'POST', '/admin/agent/servers', { host_id: hostId, label: prefix });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { hostId, credential, view: created.body };
  }
  const beat = (hostId: string, credential: string) => fetch(`${api.url}/v1/agent/hosts/${hostId}/heartbeat`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
    body: JSON.stringify({ slots_total: 3, runtime: 'docker-test', runner_version: '2', capabilities: ['container'] }),
  });

  it('releases the allocation of an idle host at once: 200, released at revision 3, host removed (tombstoned), audited', async () => {
    const { hostId, credential, view } = await allocatedHost('srv-idle');
    const res = await release(view.allocation_id, 1);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.state, res.body.revision, res.body.held, res.body.released_by], ['released', 3, [], { type: 'admin_token' }]);
    assert.ok(res.body.released_at !== null && res.body.release_requested_at !== null);
    assert.deepEqual(await show(view.allocation_id), res.body);
    assert.notEqual((await hostRow(hostId))?.removed_at, null, 'a host named by an allocation is kept as a tombstone');
    assert.equal((await beat(hostId, credential)).status, 401, 'its credential stopped working');
    assert.equal(await hostWorkflowState(env.client, hostId), 'removed');
    const rows = await auditOf(view.allocation_id);
    assert.deepEqual(rows.map((r) => [r.action, r.outcome, r.actor_type, r.details]), [
      ['agent.server.create', 'succeeded', 'admin_token', { allocation_id: view.allocation_id, host_id: hostId, label: 'srv-idle', revision: 1 }],
      ['agent.server.delete', 'succeeded', 'admin_token', { allocation_id: view.allocation_id, host_id: hostId, expected_revision: 1, revision: 3 }],
    ]);
    const again = await release(view.allocation_id, 3);
    assert.equal(again.status, 409);
    assert.match(messageOf(again), /already released \(revision 3\)/);
    assert.equal((await show(view.allocation_id)).revision, 3, 'nothing changed');
    await enrollHost(t.db, hostId);
    const anew = await admin<AllocationView>(api, 'POST', '/admin/agent/servers', { host_id: hostId });
    assert.deepEqual([anew.status, anew.body.revision, anew.body.state], [201, 1, 'active'], 'a host enrolled again can be allocated again');
  });

  it('releases the allocation of a busy host after its drain: 202 releasing, then released by the drain\'s last step', async () => {
    const { hostId, view } = await allocatedHost('srv-busy');
    const ids = await insertJobWithTurn(t.db, ownerId, hostId);
    const res = await release(view.allocation_id, 1);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.deepEqual([res.body.state, res.body.revision, res.body.held, res.body.released_at], ['releasing', 2, ['1 chat(s) placed on it'], null]);
    assert.notEqual(res.body.host_removal_requested_at, null, 'the host drains');
    assert.equal(await hostWorkflowState(env.client, hostId), 'draining');
    const repeated = await release(view.allocation_id, 2);
    assert.deepEqual([repeated.status, repeated.body.state, repeated.body.revision], [202, 'releasing', 2], 'the current revision again joins the same drain, changing nothing');
    const cancel = await admin(api, 'POST', `/admin/agent/runner-hosts/${hostId}/cancel-removal`);
    assert.equal(cancel.status, 409);
    assert.match(messageOf(cancel), new RegExp(`being released by server allocation ${view.allocation_id}`));
    const requested = await auditOf(view.allocation_id);
    assert.deepEqual(requested.slice(1).map((r) => [r.action, r.outcome, r.details]), [
      ['agent.server.delete', 'requested', { allocation_id: view.allocation_id, host_id: hostId, expected_revision: 1, revision: 2, held: ['1 chat(s) placed on it'] }],
    ], 'one requested row; the repeated DELETE wrote none');
    assert.match(requested[1]!.reason ?? '', /placed on it.*released once the host drains/);

    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    const released = await waitFor(async () => { const v = await show(view.allocation_id); return v.state === 'released' && v; }, 'the allocation released', 30_000);
    assert.deepEqual([released.revision, released.held, released.released_by], [3, [], { type: 'admin_token' }]);
    assert.notEqual((await hostRow(hostId))?.removed_at, null, 'host removed in the same step');
    const rows = await auditOf(view.allocation_id);
    assert.deepEqual(rows.slice(2).map((r) => [r.action, r.outcome, r.actor_type, r.details]), [
      ['agent.server.delete', 'succeeded', 'admin_token', { allocation_id: view.allocation_id, host_id: hostId, expected_revision: 1, revision: 3 }],
    ]);
  });

  for (const busy of [false, true]) {
    it(`lets exactly one of two concurrent releases naming the same revision win (${busy ? 'busy host: 202' : 'idle host: 200'}), the other is 409`, async () => {
      const { hostId, view } = await allocatedHost(busy ? 'srv-race-busy' : 'srv-race-idle');
      if (busy) await insertJobWithTurn(t.db, ownerId, hostId);
      const answers = await Promise.all([release(view.allocation_id, 1), release(view.allocation_id, 1)]);
      assert.deepEqual(answers.map((a) => a.status).sort(), busy ? [202, 409] : [200, 409], JSON.stringify(answers.map((a) => a.body)));
      const loser = answers.find((a) => a.status === 409)!;
      assert.match(messageOf(loser), /at revision 2, not 1.*Refresh/);
      const now = await show(view.allocation_id);
      assert.deepEqual([now.state, now.revision], busy ? ['releasing', 2] : ['released', 3]);
      const outcomes = (await auditOf(view.allocation_id)).filter((r) => r.action === 'agent.server.delete').map((r) => r.outcome).sort();
      assert.deepEqual(outcomes, busy ? ['refused', 'requested'] : ['refused', 'succeeded']);
    });
  }

  it('keeps a release whose host action failed (503) as releasing, and sending it again with the current revision finishes it', async () => {
    const { hostId, view } = await allocatedHost('srv-retry');
    await t.db.raw(`
      create function refuse_removal_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store refuses'; end $$;
      create trigger refuse_removal_audit before insert on agent_audit_log for each row when (new.target_id = '${hostId}') execute function refuse_removal_audit();
    `);
    let failed: AdminResponse<AllocationView>;
    try {
      failed = await release(view.allocation_id, 1);
    } finally {
      await t.db.raw('drop trigger refuse_removal_audit on agent_audit_log; drop function refuse_removal_audit()');
    }
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    assert.match(messageOf(failed), /releasing \(revision 2\).*could not be asked to drain.*expected_revision 2/);
    assert.deepEqual([(await show(view.allocation_id)).state, (await hostRow(hostId))?.removed_at], ['releasing', null], 'the host was not removed');
    assert.equal((await release(view.allocation_id, 1)).status, 409, 'the revision moved on');
    const done = await release(view.allocation_id, 2);
    assert.deepEqual([done.status, done.body.state, done.body.revision], [200, 'released', 3]);
  });

  it('refuses DELETE /admin/agent/runner-hosts/<host> while allocated, and removes the host as before once its allocation is released elsewhere', async () => {
    const { hostId, view } = await allocatedHost('srv-guard');
    const refused = await admin(api, 'DELETE', `/admin/agent/runner-hosts/${hostId}`);
    assert.equal(refused.status, 409);
    assert.match(messageOf(refused), new RegExp(`DELETE /admin/agent/servers/${view.allocation_id}`));
    assert.equal((await hostRow(hostId))?.removal_requested_at, null, 'nothing started');
    const other = uniqueHostId('srv-unallocated');
    hosts.add(other);
    await enrollHost(t.db, other);
    assert.equal((await admin(api, 'DELETE', `/admin/agent/runner-hosts/${other}`)).status, 200, 'a host without allocation is removed as before');
  });
});
