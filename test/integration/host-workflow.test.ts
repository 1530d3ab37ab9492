/**
 * The host workflow `host:<hostId>` over the real API, PostgreSQL and the Temporal dev server
 * (docs/agent-hosts.md "The host workflow"): slot changes (lower, raise, host
 * default) confirmed by heartbeats with their display states, stale detection at the threshold and
 * back online on the next beat, guarded removal that drains then removes, cancelling a drain, and
 * the refusals (409 with the reason, 404 unknown host, 400 naming the field). Heartbeats are sent by
 * the test as a runner would, so each reported number is chosen here. The stale threshold is 4 s.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import type { HostView } from '../../agent/hosts/host-view';
import { placeTurn } from '../../agent/hosts/placement';
import { residencyAlive } from '../../agent/grants/residency';
import { hostWorkflowId } from '../../workflows/definitions/host';
import { ADMIN_TOKEN } from '../support/admin';
import { insertJobWithTurn, insertOwner, insertRunningAttempt } from '../support/agent-rows';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { endHostWorkflows, hostWorkflowState, hostWorkflowStatus, startHostWorker, uniqueHostId } from '../support/host-workflows';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';
import { waitFor } from '../support/wait';
import type { TestWorkflowEnvironment } from '@temporalio/testing';

interface Reply<T = Record<string, unknown>> { status: number; body: T & { error?: { message: string; param?: string | null } } }

const STALE_SECONDS = 4;

describe('host workflow host:<hostId>: slots, stale detection, guarded removal (Temporal, PostgreSQL)', function () {
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
    const queue = uniqueTaskQueue('host-control');
    api = await startTestApi({
      db: t.db, temporal: env.client,
      env: { TEMPORAL_CONTROL_TASK_QUEUE: queue, AGENT_HOST_STALE_SECONDS: String(STALE_SECONDS), AGENT_HOST_DRAIN_CHECK_SECONDS: '1', AGENT_HOST_SLOTS: '3' },
    });
    worker = await startHostWorker(env, t.db, queue);
    ownerId = await insertOwner(t.db, 'host-workflow-owner@example.test');
  });
  after(async () => {
    if (env) await endHostWorkflows(env.client, hosts);
    await worker?.close();
    await api?.close();
    await t?.drop();
  });

  async function admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Reply<T>> {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Reply<T>['body'] };
  }
  const putSlots = (hostId: string, slots: unknown) => admin<HostView>('PUT', `/admin/agent/runner-hosts/${hostId}/slots`, { slots });

  /** A runner's heartbeat reporting `slotsTotal`; returns the API's answer. */
  async function beat(host: { hostId: string; credential: string }, slotsTotal: number, runnerVersion = '2'): Promise<{ host_id: string; slots_configured: number | null; slots_effective: number }> {
    const res = await fetch(`${api.url}/v1/agent/hosts/${host.hostId}/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${host.credential}` },
      body: JSON.stringify({ slots_total: slotsTotal, runtime: 'docker-test', runner_version: runnerVersion, capabilities: ['container', 'untrusted-vm-v1', 'trusted-v1'] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as { host_id: string; slots_configured: number | null; slots_effective: number };
  }

  /** An enrolled host that has beaten once (its workflow started by that beat). */
  async function onlineHost(prefix: string, slotsTotal: number, runnerVersion = '2'): Promise<{ hostId: string; credential: string }> {
    const hostId = uniqueHostId(prefix);
    hosts.add(hostId);
    const { credential } = await enrollHost(t.db, hostId);
    await beat({ hostId, credential }, slotsTotal, runnerVersion);
    await waitFor(async () => (await hostWorkflowState(env.client, hostId).catch(() => undefined)) === 'online', `${hostId} online in its workflow`);
    return { hostId, credential };
  }

  const stateOf = (hostId: string) => hostWorkflowState(env.client, hostId);
  const statusOf = (hostId: string) => hostWorkflowStatus(env.client, hostId);
  const auditOf = async (hostId: string) => (await t.db('agent_audit_log').where({ target_type: 'host', target_id: hostId }).orderBy('id')
    .select<Array<{ action: string; outcome: string; actor_type: string; actor_name: string | null; reason: string | null; details: Record<string, unknown> }>>(
      'action', 'outcome', 'actor_type', 'actor_name', 'reason', 'details'));
  const historyOf = async (hostId: string) => JSON.stringify((await env.client.workflow.getHandle(hostWorkflowId(hostId)).fetchHistory()).events);

  it('raises slots on the runner\'s confirming heartbeat: applying N until it reports N, then applied (audited, in the history)', async () => {
    const host = await onlineHost('raise', 3);
    const raised = await putSlots(host.hostId, 6);
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.deepEqual(raised.body.slots, { saved: 6, reported: 3, effective: 3, default: 3, display: 'applying 6' });
    assert.deepEqual((await statusOf(host.hostId)).pendingSlots, { slots: 6, target: 6, status: 'applying' });
    assert.deepEqual(await beat(host, 3), { host_id: host.hostId, slots_configured: 6, slots_effective: 3 }, 'the runner learns the saved number');
    assert.equal((await statusOf(host.hostId)).pendingSlots?.status, 'applying', 'still waiting: the runner has not reported it yet');
    await beat(host, 6);
    await waitFor(async () => (await statusOf(host.hostId)).pendingSlots === null, 'the workflow saw the change applied');
    assert.deepEqual((await admin<{ hosts: HostView[] }>('GET', '/admin/agent/runner-hosts')).body.hosts.find((h) => h.host_id === host.hostId)?.slots,
      { saved: 6, reported: 6, effective: 6, default: 3, display: null });
    const audit = await auditOf(host.hostId);
    assert.deepEqual(audit.map((a) => [a.action, a.outcome, a.actor_type]), [
      ['agent.host.slots_changed', 'succeeded', 'admin_token'],
      ['agent.host.slots_applied', 'succeeded', 'system'],
    ]);
    assert.equal(audit[1]!.actor_name, 'host-workflow');
    assert.deepEqual(audit[1]!.details, { slots_saved: 6, slots_total: 6 });
    const history = await historyOf(host.hostId);
    assert.match(history, /"changeSlots"/, 'the request is in the history');
    assert.match(history, /"noteHostSlotsApplied"/, 'and its confirmation');
  });

  it('lowers slots at once (admission uses the lower number) and returns to the host default with {slots: null}', async () => {
    const host = await onlineHost('lower', 6);
    const lowered = await putSlots(host.hostId, 2);
    assert.equal(lowered.status, 200);
    assert.deepEqual(lowered.body.slots, { saved: 2, reported: 6, effective: 2, default: 3, display: null }, 'in force before the runner reports it');
    await beat(host, 2);
    await waitFor(async () => (await statusOf(host.hostId)).pendingSlots === null, 'the lowering confirmed');
    const reset = await putSlots(host.hostId, null);
    assert.deepEqual(reset.body.slots, { saved: null, reported: 2, effective: 2, default: 3, display: null });
    assert.deepEqual((await statusOf(host.hostId)).pendingSlots, { slots: null, target: 3, status: 'applying' }, 'the host default is AGENT_HOST_SLOTS');
    assert.equal((await beat(host, 2)).slots_configured, null);
    await beat(host, 3);
    await waitFor(async () => (await statusOf(host.hostId)).pendingSlots === null, 'the host default confirmed');
    assert.deepEqual((await auditOf(host.hostId)).map((a) => a.action), [
      'agent.host.slots_changed', 'agent.host.slots_applied', 'agent.host.slots_changed', 'agent.host.slots_applied',
    ]);
  });

  it('shows redeploy to change for a version-1 runner, and N not applied while the host is stale, applied once it is back', async () => {
    const old = await onlineHost('old-runner', 3, '1');
    assert.equal((await putSlots(old.hostId, 6)).body.slots.display, 'redeploy to change');
    await waitFor(async () => (await statusOf(old.hostId)).pendingSlots?.status === 'redeploy', 'the workflow shows redeploy');

    const host = await onlineHost('offline', 3);
    await waitFor(async () => (await stateOf(host.hostId)) === 'stale', 'the host stale in its workflow', 30_000);
    const saved = await putSlots(host.hostId, 8);
    assert.equal(saved.status, 200);
    assert.equal(saved.body.stale, true);
    assert.equal(saved.body.slots.display, '8 not applied');
    await waitFor(async () => (await statusOf(host.hostId)).pendingSlots?.status === 'not_applied', 'the workflow shows not applied');
    assert.equal((await beat(host, 3)).slots_configured, 8);
    await beat(host, 8);
    await waitFor(async () => (await statusOf(host.hostId)).pendingSlots === null, 'applied once the host is back');
    assert.equal(await stateOf(host.hostId), 'online');
  });

  it('marks a host stale when no heartbeat comes for AGENT_HOST_STALE_SECONDS, and online again at the next beat', async () => {
    const host = await onlineHost('stale', 3);
    assert.equal(await stateOf(host.hostId), 'online');
    await waitFor(async () => (await stateOf(host.hostId)) === 'stale', 'stale after the threshold', 30_000);
    const age = await t.db('agent_hosts').where({ host_id: host.hostId })
      .first<{ age: number }>(t.db.raw('extract(epoch from (now() - last_heartbeat_at))::float8 as age'));
    assert.ok(age.age >= STALE_SECONDS, `marked stale only once the last beat is ${STALE_SECONDS} s old (it is ${age.age} s)`);
    await beat(host, 3);
    await waitFor(async () => (await stateOf(host.hostId)) === 'online', 'online at the next beat');
    const history = await historyOf(host.hostId);
    assert.match(history, /"hostHeartbeat"/, 'the beat that brought it back is in the history');
  });

  it('removes an idle host at once (200), and its workflow ends', async () => {
    const host = await onlineHost('idle', 3);
    const removed = await admin('DELETE', `/admin/agent/runner-hosts/${host.hostId}`);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.deepEqual(removed.body, { host_id: host.hostId, removed: true });
    assert.equal(await env.client.workflow.getHandle(hostWorkflowId(host.hostId)).result(), 'removed');
    assert.equal(await stateOf(host.hostId), 'removed');
    assert.equal((await admin('DELETE', `/admin/agent/runner-hosts/${host.hostId}`)).status, 404);
    assert.deepEqual((await auditOf(host.hostId)).map((a) => [a.action, a.outcome]), [['agent.host.removed', 'succeeded']]);
  });

  it('drains a busy host (202, idempotent, no new work, slots refused), then removes it once nothing holds it', async () => {
    const host = await onlineHost('drain', 3);
    const ids = await insertJobWithTurn(t.db, ownerId, host.hostId);
    const attemptId = await insertRunningAttempt(t.db, { ...ids, hostId: host.hostId });
    const draining = await admin<{ state: string; removal_requested_at: string; held: string[] }>('DELETE', `/admin/agent/runner-hosts/${host.hostId}`);
    assert.equal(draining.status, 202, JSON.stringify(draining.body));
    assert.equal(draining.body.state, 'draining');
    assert.deepEqual(draining.body.held, ['1 running turn(s)', '1 chat(s) placed on it']);
    await waitFor(async () => (await stateOf(host.hostId)) === 'draining', 'draining in the workflow');
    const again = await admin<{ removal_requested_at: string }>('DELETE', `/admin/agent/runner-hosts/${host.hostId}`);
    assert.equal(again.status, 202, 'a second request is the same drain');
    assert.equal(again.body.removal_requested_at, draining.body.removal_requested_at);

    const placement = await t.db.transaction((trx) => placeTurn(trx, { jobHostId: host.hostId, staleSeconds: STALE_SECONDS, defaultSlots: 3, profile: 'untrusted-vm-v1' }));
    assert.deepEqual(placement, { wait: 'host_offline' }, 'a draining host takes no new turn');
    const refused = await putSlots(host.hostId, 5);
    assert.equal(refused.status, 409);
    assert.match(refused.body.error?.message ?? '', /being removed/);
    assert.equal((await beat(host, 3)).slots_effective, 3, 'the runner keeps beating while its turn finishes');
    assert.equal(await residencyAlive(t.db, { attemptId, hostId: host.hostId, groupId: null, generation: null }, STALE_SECONDS), true, 'the running turn keeps its inference grant');

    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    assert.equal(await stateOf(host.hostId), 'draining', 'the placed chat still holds it');
    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    assert.equal(await env.client.workflow.getHandle(hostWorkflowId(host.hostId)).result(), 'removed');
    const row = await t.db('agent_hosts').where({ host_id: host.hostId }).first<{ removed_at: Date | null }>();
    assert.ok(row?.removed_at, 'a tombstone: history still names the host');
    const res = await fetch(`${api.url}/v1/agent/hosts/${host.hostId}/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${host.credential}` },
      body: JSON.stringify({ slots_total: 3, runtime: 'docker-test', runner_version: '2', capabilities: [] }),
    });
    assert.equal(res.status, 401, 'its credential stops working');
    assert.deepEqual((await auditOf(host.hostId)).map((a) => [a.action, a.outcome, a.actor_type]), [
      ['agent.host.removed', 'requested', 'admin_token'],
      ['agent.host.slots_changed', 'refused', 'admin_token'],
      ['agent.host.removed', 'succeeded', 'admin_token'],
    ]);
  });

  it('cancels a drain (the host is placed on again); cancelling with none pending is 409', async () => {
    const host = await onlineHost('cancel', 3);
    await insertJobWithTurn(t.db, ownerId, host.hostId);
    assert.equal((await admin('DELETE', `/admin/agent/runner-hosts/${host.hostId}`)).status, 202);
    const cancelled = await admin<HostView>('POST', `/admin/agent/runner-hosts/${host.hostId}/cancel-removal`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.removal_requested_at, null);
    await waitFor(async () => (await stateOf(host.hostId)) === 'online', 'online again');
    const placement = await t.db.transaction((trx) => placeTurn(trx, { jobHostId: host.hostId, staleSeconds: STALE_SECONDS, defaultSlots: 3, profile: 'untrusted-vm-v1' }));
    assert.deepEqual(placement, { hostId: host.hostId });
    const none = await admin('POST', `/admin/agent/runner-hosts/${host.hostId}/cancel-removal`);
    assert.equal(none.status, 409);
    assert.match(none.body.error?.message ?? '', /No removal is pending/);
    assert.equal((await putSlots(host.hostId, 4)).status, 200, 'slot changes are allowed again');
    assert.deepEqual((await auditOf(host.hostId)).map((a) => [a.action, a.outcome]), [
      ['agent.host.removed', 'requested'], ['agent.host.removal_cancelled', 'succeeded'], ['agent.host.removal_cancelled', 'refused'], ['agent.host.slots_changed', 'succeeded'],
    ]);
  });

  it('answers 404 for an unknown host and 400 naming the field of a bad body, without starting a workflow', async () => {
    const unknown = uniqueHostId('unknown');
    assert.equal((await putSlots(unknown, 4)).status, 404);
    assert.equal((await admin('DELETE', `/admin/agent/runner-hosts/${unknown}`)).status, 404);
    assert.equal((await admin('POST', `/admin/agent/runner-hosts/${unknown}/cancel-removal`)).status, 404);
    await assert.rejects(env.client.workflow.getHandle(hostWorkflowId(unknown)).describe(), /not found/i);
    const host = await onlineHost('bad-body', 3);
    for (const body of [{ slots: 1 }, { slots: 129 }, { slots: 2.5 }, { slots: '4' }, {}]) {
      const res = await admin('PUT', `/admin/agent/runner-hosts/${host.hostId}/slots`, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.param, 'slots');
    }
    assert.equal((await admin('PUT', `/admin/agent/runner-hosts/${host.hostId}/slots`, '{"slots":')).status, 400);
    assert.equal((await admin('PUT', `/admin/agent/runner-hosts/${host.hostId}/slots`, { slots: 4, burst: 1 })).status, 400);
    assert.deepEqual(await auditOf(host.hostId), [], 'nothing was changed or audited');
  });
});
