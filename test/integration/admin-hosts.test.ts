/**
 * Operator routes for execution hosts over the real API, PostgreSQL and Temporal (each change goes
 * through the host's workflow, run here by a control worker on the test's own task queue): listing
 * with slot display states, saving slots (lowering at once, raising on the runner's confirmation),
 * guarded removal (at once, or draining), and the audit row each change writes in its own
 * transaction (docs/agent-audit.md). Host ids carry this run's suffix: the Temporal dev server is
 * shared, and a workflow id (`host:<hostId>`) names one host.
 */
import assert from 'node:assert/strict';
import { createApiApp } from '../../api/app';
import { enrollHost } from '../../agent/hosts/host-registry';
import type { HostView } from '../../agent/hosts/host-view';
import { serve, type Serving } from '../../lib/http/serve';
import { signUpAndLogIn } from '../support/accounts';
import { ADMIN_TOKEN } from '../support/admin';
import { insertJobWithTurn, insertOwner, insertRunningAttempt } from '../support/agent-rows';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../support/api';
import { docker, SANDBOX_IMAGE, testLabels, testRunId } from '../support/docker';
import { runPreflight } from '../../activities/docker/runtime-preflight';
import { DEFAULT_RUNTIMES } from '../../activities/docker/container-runtime';
import { endHostWorkflows, startHostWorker } from '../support/host-workflows';
import { temporalEnv, uniqueTaskQueue } from '../support/temporal';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { captureLogs } from '../support/logs';
import { waitFor } from '../support/wait';

interface Reply<T = Record<string, unknown>> { status: number; body: T }

/** This run's host id suffix. */
const S = `-${testRunId}`.toLowerCase();

describe('admin: runner hosts (slots, display states, guarded removal)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let gw: TestGateway;
  let serving: Serving;
  const logs = captureLogs('api-admin-hosts');
  let ownerId: number;
  let plainToken: string;
  let operatorToken: string;
  let env: Awaited<ReturnType<typeof temporalEnv>>;
  let worker: { close(): Promise<void> };
  const enrolled = new Set<string>();

  before(async () => {
    t = await freshDatabase();
    env = await temporalEnv();
    const queue = uniqueTaskQueue('admin-hosts');
    api = await startTestApi({ db: t.db, temporal: env.client, env: { TEMPORAL_CONTROL_TASK_QUEUE: queue, AGENT_HOST_DRAIN_CHECK_SECONDS: '1' } });
    worker = await startHostWorker(env, t.db, queue);
    // The same assembly with a logger whose lines the tests read.
    serving = await serve(createApiApp({ ...api.deps, log: logs.log }), { host: '127.0.0.1', port: 0 });
    gw = await startTestGateway({ db: t.db, env: { AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', USER_AUTH_ENABLED: 'true' } });
    plainToken = (await signUpAndLogIn(gw.url, t.db, 'plain@example.test')).accessToken;
    operatorToken = (await signUpAndLogIn(gw.url, t.db, 'operator@example.test')).accessToken;
    await t.db('users').whereRaw('lower(email) = ?', ['operator@example.test']).update({ permissions: ['agent.admin'] });
    ownerId = await insertOwner(t.db, 'owner@example.test');
  });
  after(async () => {
    if (env) await endHostWorkflows(env.client, enrolled);
    await worker?.close();
    await gw?.close();
    await serving?.close(1000);
    await api?.close();
    await t?.drop();
  });

  async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<Reply<T>> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${serving.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
  }
  const beat = (hostId: string, credential: string, slotsTotal: number, runnerVersion: string) =>
    fetch(`${serving.url}/v1/agent/hosts/${hostId}/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: JSON.stringify({ slots_total: slotsTotal, runtime: 'docker-test', runner_version: runnerVersion, capabilities: ['container'] }),
    });
  /** Enrolls a host and heartbeats it once; returns its credential. */
  async function onlineHost(hostId: string, slotsTotal: number, runnerVersion = '2'): Promise<string> {
    const { credential } = await enrollHost(t.db, hostId);
    enrolled.add(hostId);
    assert.equal((await beat(hostId, credential, slotsTotal, runnerVersion)).status, 200);
    return credential;
  }
  const viewOf = async (hostId: string): Promise<HostView | undefined> =>
    (await call<{ hosts: HostView[] }>('GET', '/admin/agent/runner-hosts')).body.hosts.find((h) => h.host_id === hostId);
  const putSlots = (hostId: string, slots: unknown, token: string | null = ADMIN_TOKEN) => call<HostView>('PUT', `/admin/agent/runner-hosts/${hostId}/slots`, { slots }, token);

  it('refuses callers without operator credentials: 401 without or with a wrong token, 403 without agent.admin', async () => {
    await onlineHost(`auth-host${S}`, 3);
    const cases: Array<[string, string, unknown?]> = [
      ['GET', '/admin/agent/runner-hosts'],
      ['PUT', `/admin/agent/runner-hosts/auth-host${S}/slots`, { slots: 4 }],
      ['DELETE', `/admin/agent/runner-hosts/auth-host${S}`],
    ];
    for (const [method, path, body] of cases) {
      assert.equal((await call(method, path, body, null)).status, 401, `${method} ${path} without a token`);
      assert.equal((await call(method, path, body, 'wrong-token')).status, 401, `${method} ${path} with a wrong token`);
      assert.equal((await call(method, path, body, plainToken)).status, 403, `${method} ${path} without agent.admin`);
    }
    const row = await t.db('agent_hosts').where({ host_id: `auth-host${S}` }).first<{ slots_saved: number | null }>();
    assert.equal(row?.slots_saved, null, 'nothing was saved');
    assert.equal((await call('GET', '/admin/agent/runner-hosts', undefined, operatorToken)).status, 200);
    assert.equal((await putSlots(`auth-host${S}`, 4, operatorToken)).status, 200);
  });

  it('says per execution profile whether a host may take its work and, from its preflight, why not', async () => {
    const hostId = `preflight-host${S}`;
    const { credential } = await enrollHost(t.db, hostId);
    enrolled.add(hostId);
    const real = await runPreflight({ docker: docker(), image: SANDBOX_IMAGE, runtimes: DEFAULT_RUNTIMES, labels: testLabels() });
    const guest = real.probes.find((p) => p.runtime === 'runsc')?.guest_kernel;
    // This machine's preflight as seen from a host whose kernel equals gVisor's: no guest kernel of its own.
    const shared = await runPreflight({ docker: docker(), image: SANDBOX_IMAGE, runtimes: DEFAULT_RUNTIMES, labels: testLabels(), hostKernel: guest });
    const post = (preflight: unknown) => fetch(`${serving.url}/v1/agent/hosts/${hostId}/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: JSON.stringify({ slots_total: 3, runtime: 'docker-test', runner_version: '2', capabilities: ['container', ...(preflight as { attestations: string[] }).attestations], preflight }),
    });
    assert.equal((await post(shared)).status, 200);
    let view = await viewOf(hostId);
    assert.deepEqual(view?.execution_profiles['trusted-v1'], { attested: true, reason: null });
    assert.equal(view?.execution_profiles['untrusted-vm-v1'].attested, false);
    assert.match(view?.execution_profiles['untrusted-vm-v1'].reason ?? '', /runs on the host kernel .* no guest kernel of its own/);
    assert.equal(view?.preflight?.host_kernel, guest);
    assert.equal((await post(real)).status, 200);
    view = await viewOf(hostId);
    assert.deepEqual(view?.execution_profiles['untrusted-vm-v1'], { attested: true, reason: null });
    assert.equal(view?.shared_kernel_accepted, false);
    const malformed = await post({ ...real, probes: [{ runtime: 'x\u0000', ok: true, duration_ms: 1 }] });
    assert.equal(malformed.status, 400, 'a preflight is untrusted input like the rest of the beat');
  });

  it('lists hosts with their slot state, running turns and runner facts', async () => {
    await onlineHost(`list-host${S}`, 5);
    await insertRunningAttempt(t.db, { ...(await insertJobWithTurn(t.db, ownerId, `list-host${S}`)), hostId: `list-host${S}` });
    const view = await viewOf(`list-host${S}`);
    assert.ok(view);
    assert.deepEqual(Object.keys(view).sort(), [
      'capabilities', 'enrolled_at', 'execution_profiles', 'host_id', 'last_heartbeat_at', 'online', 'preflight', 'removal_requested_at', 'runner_version',
      'running_turns', 'runtime', 'shared_kernel_accepted', 'slots', 'stale',
    ]);
    assert.equal(view.online, true);
    assert.equal(view.stale, false);
    assert.deepEqual(view.slots, { saved: null, reported: 5, effective: 5, default: 3, display: null });
    assert.equal(view.running_turns, 1);
    assert.equal(view.runtime, 'docker-test');
    assert.equal(view.runner_version, '2');
    assert.deepEqual(view.capabilities, ['container']);
    assert.equal(view.preflight, null);
    for (const profile of ['untrusted-vm-v1', 'trusted-v1'] as const) {
      assert.equal(view.execution_profiles[profile].attested, false, 'a runner that reports no preflight attests nothing');
      assert.match(view.execution_profiles[profile].reason ?? '', /no runtime preflight/);
    }
    assert.ok(!Number.isNaN(Date.parse(view.last_heartbeat_at ?? '')));
    assert.ok(!JSON.stringify(view).includes('credential'));
    const never = await enrollHost(t.db, `quiet-host${S}`);
    enrolled.add(`quiet-host${S}`);
    assert.ok(never.credential);
    const quiet = await viewOf(`quiet-host${S}`);
    assert.deepEqual([quiet?.online, quiet?.stale, quiet?.slots.effective, quiet?.last_heartbeat_at], [false, false, 0, null]);
  });

  it('rejects invalid slots with 400 naming slots, and unknown hosts with 404', async () => {
    await onlineHost(`valid-host${S}`, 3);
    for (const slots of [1, 129, 2.5, '4', undefined, true]) {
      const res = await call<{ error: { message: string; param: string | null } }>('PUT', `/admin/agent/runner-hosts/valid-host${S}/slots`, slots === undefined ? {} : { slots });
      assert.equal(res.status, 400, `slots ${String(slots)}`);
      assert.equal(res.body.error.param, 'slots');
      assert.match(res.body.error.message, /slots/);
    }
    const extra = await call<{ error: { message: string } }>('PUT', `/admin/agent/runner-hosts/valid-host${S}/slots`, { slots: 4, burst: 1 });
    assert.equal(extra.status, 400);
    assert.match(extra.body.error.message, /burst/);
    assert.equal((await call('PUT', `/admin/agent/runner-hosts/valid-host${S}/slots`, '{"slots":')).status, 400);
    assert.equal((await t.db('agent_hosts').where({ host_id: `valid-host${S}` }).first<{ slots_saved: number | null }>())?.slots_saved, null);
    assert.equal((await putSlots(`no-such-host${S}`, 4)).status, 404);
    assert.equal((await putSlots('Not A Host!', 4)).status, 404);
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/no-such-host${S}`)).status, 404);
  });

  it('applies a lowering at once and records the change in the structured log', async () => {
    const credential = await onlineHost(`low-host${S}`, 6);
    const res = await putSlots(`low-host${S}`, 2);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.slots, { saved: 2, reported: 6, effective: 2, default: 3, display: null });
    assert.deepEqual((await viewOf(`low-host${S}`))?.slots.effective, 2);
    const line = logs.lines.find((l) => l.event === 'agent_host_slots_changed' && l.host_id === `low-host${S}`);
    assert.ok(line, 'agent_host_slots_changed logged');
    assert.equal(line.slots_saved, 2);
    assert.equal(line.slots_previous, null);
    assert.ok(!JSON.stringify(logs.lines).includes(credential), 'no credential in the log');
    assert.ok(!JSON.stringify(logs.lines).includes(ADMIN_TOKEN), 'no admin token in the log');
  });

  it('shows applying N for a raise until a version-2 runner confirms it by heartbeat', async () => {
    const credential = await onlineHost(`raise-host${S}`, 3);
    const res = await putSlots(`raise-host${S}`, 6);
    assert.deepEqual(res.body.slots, { saved: 6, reported: 3, effective: 3, default: 3, display: 'applying 6' });
    const answer = await (await beat(`raise-host${S}`, credential, 3, '2')).json();
    assert.deepEqual(answer, { host_id: `raise-host${S}`, slots_configured: 6, slots_effective: 3 });
    assert.equal((await viewOf(`raise-host${S}`))?.slots.display, 'applying 6');
    await beat(`raise-host${S}`, credential, 6, '2');
    assert.deepEqual((await viewOf(`raise-host${S}`))?.slots, { saved: 6, reported: 6, effective: 6, default: 3, display: null });
  });

  it('shows redeploy to change for a runner that ignores remote slot changes (version 1)', async () => {
    const credential = await onlineHost(`old-host${S}`, 3, '1');
    assert.equal((await putSlots(`old-host${S}`, 6)).body.slots.display, 'redeploy to change');
    await beat(`old-host${S}`, credential, 3, '1');
    assert.deepEqual((await viewOf(`old-host${S}`))?.slots, { saved: 6, reported: 3, effective: 3, default: 3, display: 'redeploy to change' });
    const lowered = await putSlots(`old-host${S}`, 2);
    assert.deepEqual(lowered.body.slots, { saved: 2, reported: 3, effective: 2, default: 3, display: 'redeploy to change' });
  });

  it('shows N not applied while the host is stale, and nothing pending for the host default', async () => {
    await onlineHost(`stale-host${S}`, 3);
    await t.db('agent_hosts').where({ host_id: `stale-host${S}` }).update({ last_heartbeat_at: t.db.raw(`now() - interval '120 seconds'`) });
    const res = await putSlots(`stale-host${S}`, 8);
    assert.equal(res.body.online, false);
    assert.equal(res.body.stale, true);
    assert.deepEqual(res.body.slots, { saved: 8, reported: 3, effective: 3, default: 3, display: '8 not applied' });
    const reset = await putSlots(`stale-host${S}`, null);
    assert.equal(reset.status, 200);
    assert.deepEqual(reset.body.slots, { saved: null, reported: 3, effective: 3, default: 3, display: null });
  });

  const gone = (hostId: string) => waitFor(async () => (await t.db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').first()) === undefined, `${hostId} removed`, 30_000);

  it('drains a host with a running turn or a placed chat (202, idempotent), removes it once nothing holds it, and its credential stops working', async () => {
    const hostId = `busy-host${S}`;
    const credential = await onlineHost(hostId, 3);
    const ids = await insertJobWithTurn(t.db, ownerId, hostId);
    const attemptId = await insertRunningAttempt(t.db, { ...ids, hostId });
    const draining = await call<{ held: string[]; state: string; removed: boolean; removal_requested_at: string }>('DELETE', `/admin/agent/runner-hosts/${hostId}`);
    assert.equal(draining.status, 202);
    assert.deepEqual([draining.body.removed, draining.body.state, draining.body.held], [false, 'draining', ['1 running turn(s)', '1 chat(s) placed on it']]);
    assert.equal((await viewOf(hostId))?.removal_requested_at, draining.body.removal_requested_at, 'the view shows the pending removal');
    assert.equal((await beat(hostId, credential, 3, '2')).status, 200, 'a draining host keeps beating while its turn finishes');
    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    const again = await call<{ held: string[]; removal_requested_at: string }>('DELETE', `/admin/agent/runner-hosts/${hostId}`);
    assert.equal(again.status, 202, 'a second request joins the drain');
    assert.deepEqual([again.body.held, again.body.removal_requested_at], [['1 chat(s) placed on it'], draining.body.removal_requested_at]);
    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    await gone(hostId);
    assert.equal((await beat(hostId, credential, 3, '2')).status, 401);
    assert.equal(await viewOf(hostId), undefined);
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/${hostId}`)).status, 404);
    assert.equal((await putSlots(hostId, 4)).status, 404);
    assert.equal((await t.db('agent_attempts').where({ attempt_id: attemptId }).first<{ host_id: string }>())?.host_id, hostId, 'history keeps naming the host');
    const enrolledAgain = await enrollHost(t.db, hostId);
    assert.equal((await beat(hostId, enrolledAgain.credential, 3, '2')).status, 200, 'enrolling again brings the host back');
  });

  it('drains a host holding a retained sandbox until it is cold; deletes at once the row of an idle host nobody names', async () => {
    const credential = await onlineHost(`box-host${S}`, 3);
    await t.db('agent_sandboxes').insert({ group_id: 'grp_box', host_id: `box-host${S}`, container_name: 'agent-grp-box', state: 'stopped' });
    const draining = await call<{ held: string[] }>('DELETE', `/admin/agent/runner-hosts/box-host${S}`);
    assert.equal(draining.status, 202);
    assert.deepEqual(draining.body.held, ['1 retained sandbox(es)']);
    await t.db('agent_sandboxes').where({ group_id: 'grp_box' }).update({ state: 'cold' });
    await gone(`box-host${S}`);
    assert.equal((await beat(`box-host${S}`, credential, 3, '2')).status, 401);

    const idle = await onlineHost(`idle-host${S}`, 3);
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/idle-host${S}`)).status, 200);
    assert.equal(await t.db('agent_hosts').where({ host_id: `idle-host${S}` }).first(), undefined, 'the row is gone');
    assert.equal((await beat(`idle-host${S}`, idle, 3, '2')).status, 401);
    assert.ok(logs.lines.some((l) => l.event === 'agent_host_removed' && l.host_id === `idle-host${S}`));
  });

  interface AuditRowOf { actor_type: string; actor_user_id: string | null; actor_ip: string | null; source: string; category: string; action: string; target_type: string; target_id: string; outcome: string; reason: string | null; details: Record<string, unknown> }
  const auditOf = (hostId: string) => t.db('agent_audit_log').where({ target_type: 'host', target_id: hostId }).orderBy('id') as Promise<AuditRowOf[]>;
  /** The operator's slot changes (the workflow adds `agent.host.slots_applied` rows of its own when the runner confirms). */
  const changesOf = async (hostId: string) => (await auditOf(hostId)).filter((r) => r.action === 'agent.host.slots_changed');

  it('audits a slots change: exactly one row with the operator by user id, the address, the host and the outcome', async () => {
    await onlineHost(`audit-slots-host${S}`, 3);
    const operatorId = Number((await t.db('users').whereRaw('lower(email) = ?', ['operator@example.test']).first<{ id: string }>()).id);
    assert.equal((await putSlots(`audit-slots-host${S}`, 5, operatorToken)).status, 200);
    const rows = await changesOf(`audit-slots-host${S}`);
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.deepEqual(
      [row!.category, row!.action, row!.source, row!.actor_type, Number(row!.actor_user_id), row!.outcome],
      ['hosts', 'agent.host.slots_changed', 'admin', 'user', operatorId, 'succeeded'],
    );
    assert.match(row!.actor_ip ?? '', /127\.0\.0\.1/);
    assert.deepEqual(row!.details, { slots_previous: null, slots_saved: 5 });
    assert.equal((await putSlots(`audit-slots-host${S}`, null)).status, 200);
    const again = await changesOf(`audit-slots-host${S}`);
    assert.equal(again.length, 2, 'one row per change');
    assert.deepEqual([again[1]!.actor_type, again[1]!.actor_user_id, again[1]!.details], ['admin_token', null, { slots_previous: 5, slots_saved: null }]);
    assert.equal((await putSlots(`audit-slots-host${S}`, 1)).status, 400);
    assert.equal((await putSlots(`audit-slots-host${S}`, 4, plainToken)).status, 403);
    assert.equal((await changesOf(`audit-slots-host${S}`)).length, 2, 'refused requests change nothing and write nothing');
    assert.equal((await putSlots(`audit-no-such-host${S}`, 4)).status, 404);
    assert.equal((await auditOf(`audit-no-such-host${S}`)).length, 0);
  });

  it('audits a drained removal: one requested row with what holds the host, one succeeded row when it is removed', async () => {
    const hostId = `audit-remove-host${S}`;
    await onlineHost(hostId, 3);
    const ids = await insertJobWithTurn(t.db, ownerId, hostId);
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/${hostId}`)).status, 202);
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/${hostId}`)).status, 202);
    const requested = await auditOf(hostId);
    assert.equal(requested.length, 1, 'a second request while draining writes nothing');
    assert.deepEqual([requested[0]!.action, requested[0]!.actor_type, requested[0]!.outcome], ['agent.host.removed', 'admin_token', 'requested']);
    assert.match(requested[0]!.reason ?? '', /placed on it/);
    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    await gone(hostId);
    const rows = await auditOf(hostId);
    assert.equal(rows.length, 2);
    assert.deepEqual(
      [rows[1]!.category, rows[1]!.action, rows[1]!.source, rows[1]!.actor_type, rows[1]!.outcome, rows[1]!.reason, rows[1]!.details.tombstone, rows[1]!.details.drained],
      ['hosts', 'agent.host.removed', 'admin', 'admin_token', 'succeeded', null, true, true],
      'the operator who asked is named on the removal',
    );
    assert.equal((await call('DELETE', `/admin/agent/runner-hosts/${hostId}`)).status, 404);
    assert.equal((await auditOf(hostId)).length, 2, 'an unknown host writes nothing');
  });

  it('makes a change and its audit row commit together: when the audit insert fails, nothing changes (503, the workflow could not carry it out)', async () => {
    await onlineHost(`audit-fail-host${S}`, 3);
    await t.db.raw(`
      create function refuse_host_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store refuses'; end $$;
      create trigger refuse_host_audit before insert on agent_audit_log for each row when (new.target_id = 'audit-fail-host${S}') execute function refuse_host_audit();
    `);
    try {
      assert.equal((await putSlots(`audit-fail-host${S}`, 6)).status, 503);
      assert.equal((await call('DELETE', `/admin/agent/runner-hosts/audit-fail-host${S}`)).status, 503);
    } finally {
      await t.db.raw('drop trigger refuse_host_audit on agent_audit_log; drop function refuse_host_audit()');
    }
    const row = await t.db('agent_hosts').where({ host_id: `audit-fail-host${S}` }).first<{ slots_saved: number | null; removed_at: Date | null }>();
    assert.deepEqual([row?.slots_saved, row?.removed_at], [null, null], 'neither change happened without its audit row');
  });
});
