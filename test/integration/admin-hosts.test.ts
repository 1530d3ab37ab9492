/**
 * Operator routes for execution hosts over the real API and PostgreSQL: listing with slot display
 * states, saving slots (lowering at once, raising on the runner's confirmation), guarded removal,
 * and the audit row each change writes in its own transaction (docs/agent-audit.md).
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
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { captureLogs } from '../support/logs';

interface Reply<T = Record<string, unknown>> { status: number; body: T }

describe('admin: runner hosts (slots, display states, guarded removal)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let gw: TestGateway;
  let serving: Serving;
  const logs = captureLogs('api-admin-hosts');
  let ownerId: number;
  let plainToken: string;
  let operatorToken: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    // The same assembly with a logger whose lines the tests read.
    serving = await serve(createApiApp({ ...api.deps, log: logs.log }), { host: '127.0.0.1', port: 0 });
    gw = await startTestGateway({ db: t.db, env: { AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', USER_AUTH_ENABLED: 'true' } });
    plainToken = (await signUpAndLogIn(gw.url, t.db, 'plain@example.test')).accessToken;
    operatorToken = (await signUpAndLogIn(gw.url, t.db, 'operator@example.test')).accessToken;
    await t.db('users').whereRaw('lower(email) = ?', ['operator@example.test']).update({ permissions: ['agent.admin'] });
    ownerId = await insertOwner(t.db, 'owner@example.test');
  });
  after(async () => {
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
    assert.equal((await beat(hostId, credential, slotsTotal, runnerVersion)).status, 200);
    return credential;
  }
  const viewOf = async (hostId: string): Promise<HostView | undefined> =>
    (await call<{ hosts: HostView[] }>('GET', '/admin/agent/runner-hosts')).body.hosts.find((h) => h.host_id === hostId);
  const putSlots = (hostId: string, slots: unknown, token: string | null = ADMIN_TOKEN) => call<HostView>('PUT', `/admin/agent/runner-hosts/${hostId}/slots`, { slots }, token);

  it('refuses callers without operator credentials: 401 without or with a wrong token, 403 without agent.admin', async () => {
    await onlineHost('auth-host', 3);
    const cases: Array<[string, string, unknown?]> = [
      ['GET', '/admin/agent/runner-hosts'],
      ['PUT', '/admin/agent/runner-hosts/auth-host/slots', { slots: 4 }],
      ['DELETE', '/admin/agent/runner-hosts/auth-host'],
    ];
    for (const [method, path, body] of cases) {
      assert.equal((await call(method, path, body, null)).status, 401, `${method} ${path} without a token`);
      assert.equal((await call(method, path, body, 'wrong-token')).status, 401, `${method} ${path} with a wrong token`);
      assert.equal((await call(method, path, body, plainToken)).status, 403, `${method} ${path} without agent.admin`);
    }
    const row = await t.db('agent_hosts').where({ host_id: 'auth-host' }).first<{ slots_saved: number | null }>();
    assert.equal(row?.slots_saved, null, 'nothing was saved');
    assert.equal((await call('GET', '/admin/agent/runner-hosts', undefined, operatorToken)).status, 200);
    assert.equal((await putSlots('auth-host', 4, operatorToken)).status, 200);
  });

  it('lists hosts with their slot state, running turns and runner facts', async () => {
    await onlineHost('list-host', 5);
    await insertRunningAttempt(t.db, { ...(await insertJobWithTurn(t.db, ownerId, 'list-host')), hostId: 'list-host' });
    const view = await viewOf('list-host');
    assert.ok(view);
    assert.deepEqual(Object.keys(view).sort(), [
      'capabilities', 'enrolled_at', 'host_id', 'last_heartbeat_at', 'online', 'removal_requested_at', 'runner_version', 'running_turns', 'runtime', 'slots', 'stale',
    ]);
    assert.equal(view.online, true);
    assert.equal(view.stale, false);
    assert.deepEqual(view.slots, { saved: null, reported: 5, effective: 5, default: 3, display: null });
    assert.equal(view.running_turns, 1);
    assert.equal(view.runtime, 'docker-test');
    assert.equal(view.runner_version, '2');
    assert.deepEqual(view.capabilities, ['container']);
    assert.ok(!Number.isNaN(Date.parse(view.last_heartbeat_at ?? '')));
    assert.ok(!JSON.stringify(view).includes('credential'));
    const never = await enrollHost(t.db, 'quiet-host');
    assert.ok(never.credential);
    const quiet = await viewOf('quiet-host');
    assert.deepEqual([quiet?.online, quiet?.stale, quiet?.slots.effective, quiet?.last_heartbeat_at], [false, false, 0, null]);
  });

  it('rejects invalid slots with 400 naming slots, and unknown hosts with 404', async () => {
    await onlineHost('valid-host', 3);
    for (const slots of [1, 129, 2.5, '4', undefined, true]) {
      const res = await call<{ error: { message: string; param: string | null } }>('PUT', '/admin/agent/runner-hosts/valid-host/slots', slots === undefined ? {} : { slots });
      assert.equal(res.status, 400, `slots ${String(slots)}`);
      assert.equal(res.body.error.param, 'slots');
      assert.match(res.body.error.message, /slots/);
    }
    const extra = await call<{ error: { message: string } }>('PUT', '/admin/agent/runner-hosts/valid-host/slots', { slots: 4, burst: 1 });
    assert.equal(extra.status, 400);
    assert.match(extra.body.error.message, /burst/);
    assert.equal((await call('PUT', '/admin/agent/runner-hosts/valid-host/slots', '{"slots":')).status, 400);
    assert.equal((await t.db('agent_hosts').where({ host_id: 'valid-host' }).first<{ slots_saved: number | null }>())?.slots_saved, null);
    assert.equal((await putSlots('no-such-host', 4)).status, 404);
    assert.equal((await putSlots('Not A Host!', 4)).status, 404);
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/no-such-host')).status, 404);
  });

  it('applies a lowering at once and records the change in the structured log', async () => {
    const credential = await onlineHost('low-host', 6);
    const res = await putSlots('low-host', 2);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.slots, { saved: 2, reported: 6, effective: 2, default: 3, display: null });
    assert.deepEqual((await viewOf('low-host'))?.slots.effective, 2);
    const line = logs.lines.find((l) => l.event === 'agent_host_slots_changed' && l.host_id === 'low-host');
    assert.ok(line, 'agent_host_slots_changed logged');
    assert.equal(line.slots_saved, 2);
    assert.equal(line.slots_previous, null);
    assert.ok(!JSON.stringify(logs.lines).includes(credential), 'no credential in the log');
    assert.ok(!JSON.stringify(logs.lines).includes(ADMIN_TOKEN), 'no admin token in the log');
  });

  it('shows applying N for a raise until a version-2 runner confirms it by heartbeat', async () => {
    const credential = await onlineHost('raise-host', 3);
    const res = await putSlots('raise-host', 6);
    assert.deepEqual(res.body.slots, { saved: 6, reported: 3, effective: 3, default: 3, display: 'applying 6' });
    const answer = await (await beat('raise-host', credential, 3, '2')).json();
    assert.deepEqual(answer, { host_id: 'raise-host', slots_configured: 6, slots_effective: 3 });
    assert.equal((await viewOf('raise-host'))?.slots.display, 'applying 6');
    await beat('raise-host', credential, 6, '2');
    assert.deepEqual((await viewOf('raise-host'))?.slots, { saved: 6, reported: 6, effective: 6, default: 3, display: null });
  });

  it('shows redeploy to change for a runner that ignores remote slot changes (version 1)', async () => {
    const credential = await onlineHost('old-host', 3, '1');
    assert.equal((await putSlots('old-host', 6)).body.slots.display, 'redeploy to change');
    await beat('old-host', credential, 3, '1');
    assert.deepEqual((await viewOf('old-host'))?.slots, { saved: 6, reported: 3, effective: 3, default: 3, display: 'redeploy to change' });
    const lowered = await putSlots('old-host', 2);
    assert.deepEqual(lowered.body.slots, { saved: 2, reported: 3, effective: 2, default: 3, display: 'redeploy to change' });
  });

  it('shows N not applied while the host is stale, and nothing pending for the host default', async () => {
    await onlineHost('stale-host', 3);
    await t.db('agent_hosts').where({ host_id: 'stale-host' }).update({ last_heartbeat_at: t.db.raw(`now() - interval '120 seconds'`) });
    const res = await putSlots('stale-host', 8);
    assert.equal(res.body.online, false);
    assert.equal(res.body.stale, true);
    assert.deepEqual(res.body.slots, { saved: 8, reported: 3, effective: 3, default: 3, display: '8 not applied' });
    const reset = await putSlots('stale-host', null);
    assert.equal(reset.status, 200);
    assert.deepEqual(reset.body.slots, { saved: null, reported: 3, effective: 3, default: 3, display: null });
  });

  it('refuses to remove a host with a running turn or a placed chat (409), then removes it and its credential stops working', async () => {
    const credential = await onlineHost('busy-host', 3);
    const ids = await insertJobWithTurn(t.db, ownerId, 'busy-host');
    const attemptId = await insertRunningAttempt(t.db, { ...ids, hostId: 'busy-host' });
    const refused = await call<{ error: { message: string } }>('DELETE', '/admin/agent/runner-hosts/busy-host');
    assert.equal(refused.status, 409);
    assert.match(refused.body.error.message, /1 running turn/);
    assert.match(refused.body.error.message, /1 chat\(s\) placed on it/);
    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    const placed = await call<{ error: { message: string } }>('DELETE', '/admin/agent/runner-hosts/busy-host');
    assert.equal(placed.status, 409);
    assert.doesNotMatch(placed.body.error.message, /running turn/);
    assert.match(placed.body.error.message, /placed on it/);
    assert.equal((await beat('busy-host', credential, 3, '2')).status, 200, 'a refused removal changes nothing');
    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    const removed = await call('DELETE', '/admin/agent/runner-hosts/busy-host');
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { host_id: 'busy-host', removed: true });
    assert.equal((await beat('busy-host', credential, 3, '2')).status, 401);
    assert.equal(await viewOf('busy-host'), undefined);
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/busy-host')).status, 404);
    assert.equal((await putSlots('busy-host', 4)).status, 404);
    assert.equal((await t.db('agent_attempts').where({ attempt_id: attemptId }).first<{ host_id: string }>())?.host_id, 'busy-host', 'history keeps naming the host');
    const again = await enrollHost(t.db, 'busy-host');
    assert.equal((await beat('busy-host', again.credential, 3, '2')).status, 200, 'enrolling again brings the host back');
  });

  it('refuses to remove a host holding a retained sandbox; deletes the row of a host nobody names', async () => {
    const credential = await onlineHost('box-host', 3);
    await t.db('agent_sandboxes').insert({ group_id: 'grp_box', host_id: 'box-host', container_name: 'agent-grp-box', state: 'stopped' });
    const refused = await call<{ error: { message: string } }>('DELETE', '/admin/agent/runner-hosts/box-host');
    assert.equal(refused.status, 409);
    assert.match(refused.body.error.message, /retained sandbox/);
    await t.db('agent_sandboxes').where({ group_id: 'grp_box' }).update({ state: 'cold' });
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/box-host')).status, 200);
    assert.equal((await beat('box-host', credential, 3, '2')).status, 401);

    const idle = await onlineHost('idle-host', 3);
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/idle-host')).status, 200);
    assert.equal(await t.db('agent_hosts').where({ host_id: 'idle-host' }).first(), undefined, 'the row is gone');
    assert.equal((await beat('idle-host', idle, 3, '2')).status, 401);
    assert.ok(logs.lines.some((l) => l.event === 'agent_host_removed' && l.host_id === 'idle-host'));
  });

  interface AuditRowOf { actor_type: string; actor_user_id: string | null; actor_ip: string | null; source: string; category: string; action: string; target_type: string; target_id: string; outcome: string; reason: string | null; details: Record<string, unknown> }
  const auditOf = (hostId: string) => t.db('agent_audit_log').where({ target_type: 'host', target_id: hostId }).orderBy('id') as Promise<AuditRowOf[]>;

  it('audits a slots change: exactly one row with the operator by user id, the address, the host and the outcome', async () => {
    await onlineHost('audit-slots-host', 3);
    const operatorId = Number((await t.db('users').whereRaw('lower(email) = ?', ['operator@example.test']).first<{ id: string }>()).id);
    assert.equal((await putSlots('audit-slots-host', 5, operatorToken)).status, 200);
    const rows = await auditOf('audit-slots-host');
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.deepEqual(
      [row!.category, row!.action, row!.source, row!.actor_type, Number(row!.actor_user_id), row!.outcome],
      ['hosts', 'agent.host.slots_changed', 'admin', 'user', operatorId, 'succeeded'],
    );
    assert.match(row!.actor_ip ?? '', /127\.0\.0\.1/);
    assert.deepEqual(row!.details, { slots_previous: null, slots_saved: 5 });
    assert.equal((await putSlots('audit-slots-host', null)).status, 200);
    const again = await auditOf('audit-slots-host');
    assert.equal(again.length, 2, 'one row per change');
    assert.deepEqual([again[1]!.actor_type, again[1]!.actor_user_id, again[1]!.details], ['admin_token', null, { slots_previous: 5, slots_saved: null }]);
    assert.equal((await putSlots('audit-slots-host', 1)).status, 400);
    assert.equal((await putSlots('audit-slots-host', 4, plainToken)).status, 403);
    assert.equal((await auditOf('audit-slots-host')).length, 2, 'refused requests change nothing and write nothing');
    assert.equal((await putSlots('audit-no-such-host', 4)).status, 404);
    assert.equal((await auditOf('audit-no-such-host')).length, 0);
  });

  it('audits a removal (exactly one succeeded row) and a refused removal (one refused row with the reason)', async () => {
    await onlineHost('audit-remove-host', 3);
    const ids = await insertJobWithTurn(t.db, ownerId, 'audit-remove-host');
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/audit-remove-host')).status, 409);
    const refused = await auditOf('audit-remove-host');
    assert.equal(refused.length, 1);
    assert.deepEqual([refused[0]!.action, refused[0]!.actor_type, refused[0]!.outcome], ['agent.host.removed', 'admin_token', 'refused']);
    assert.match(refused[0]!.reason ?? '', /placed on it/);
    await t.db('agent_jobs').where({ job_id: ids.jobId }).update({ deleted_at: t.db.fn.now() });
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/audit-remove-host')).status, 200);
    const rows = await auditOf('audit-remove-host');
    assert.equal(rows.length, 2);
    assert.deepEqual(
      [rows[1]!.category, rows[1]!.action, rows[1]!.source, rows[1]!.actor_type, rows[1]!.outcome, rows[1]!.reason, rows[1]!.details],
      ['hosts', 'agent.host.removed', 'admin', 'admin_token', 'succeeded', null, { tombstone: true }],
    );
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/audit-remove-host')).status, 404);
    assert.equal((await auditOf('audit-remove-host')).length, 2, 'an unknown host writes nothing');
  });

  it('makes a change and its audit row commit together: when the audit insert fails, the slots are not saved', async () => {
    await onlineHost('audit-fail-host', 3);
    await t.db.raw(`
      create function refuse_host_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store refuses'; end $$;
      create trigger refuse_host_audit before insert on agent_audit_log for each row when (new.target_id = 'audit-fail-host') execute function refuse_host_audit();
    `);
    try {
      assert.equal((await putSlots('audit-fail-host', 6)).status, 500);
      assert.equal((await call('DELETE', '/admin/agent/runner-hosts/audit-fail-host')).status, 500);
    } finally {
      await t.db.raw('drop trigger refuse_host_audit on agent_audit_log; drop function refuse_host_audit()');
    }
    const row = await t.db('agent_hosts').where({ host_id: 'audit-fail-host' }).first<{ slots_saved: number | null; removed_at: Date | null }>();
    assert.deepEqual([row?.slots_saved, row?.removed_at], [null, null], 'neither change happened without its audit row');
  });
});
