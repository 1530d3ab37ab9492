/**
 * An operator's host action while Temporal is unreachable: a second API instance whose Temporal
 * address is a closed loopback port (the shared Temporal server is never touched). Every action
 * that goes through the host workflow answers 503 naming Temporal, within the probe's deadline
 * rather than the action's long one, and nothing changes in PostgreSQL. Sandbox actions (single and
 * batch) likewise: a 503 naming Temporal instead of waiting out the action's 90 s deadline.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { createTemporalClient } from '../../lib/temporal';
import { ADMIN_TOKEN } from '../support/admin';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { unusedLoopbackPort } from '../support/ports';

describe('admin: runner-host and sandbox actions while Temporal is unreachable', function () {
  // The probe gives up after TEMPORAL_CALL_TIMEOUT_SECONDS (1 here); the action's own deadline is 60 s.
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  const HOST = 'temporal-down-host';

  before(async () => {
    t = await freshDatabase();
    const temporal = createTemporalClient({ TEMPORAL_ADDRESS: `127.0.0.1:${await unusedLoopbackPort()}`, TEMPORAL_NAMESPACE: 'default' });
    api = await startTestApi({ db: t.db, temporal: temporal.client, env: { TEMPORAL_CALL_TIMEOUT_SECONDS: '1' } });
    await enrollHost(t.db, HOST);
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  async function call(method: string, path: string, body?: unknown): Promise<{ status: number; message: string }> {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = await res.json() as { error?: { message?: string } };
    return { status: res.status, message: json.error?.message ?? '' };
  }

  const UNREACHABLE = /^Temporal is unreachable \(no answer within 1 s\): the host action was not carried out and nothing changed/;

  it('answers 503 naming Temporal for a slot change, a removal and a cancelled removal, and changes nothing', async () => {
    for (const [method, path, body] of [
      ['PUT', `/admin/agent/runner-hosts/${HOST}/slots`, { slots: 6 }],
      ['DELETE', `/admin/agent/runner-hosts/${HOST}`, undefined],
      ['POST', `/admin/agent/runner-hosts/${HOST}/cancel-removal`, undefined],
    ] as const) {
      const reply = await call(method, path, body);
      assert.equal(reply.status, 503, `${method} ${path}`);
      assert.match(reply.message, UNREACHABLE, `${method} ${path}`);
    }
    const row = await t.db('agent_hosts').where({ host_id: HOST }).first<Record<string, unknown>>('slots_saved', 'removal_requested_at', 'removed_at');
    assert.deepEqual(row, { slots_saved: null, removal_requested_at: null, removed_at: null });
    assert.equal(Number((await t.db('agent_audit_log').count({ n: '*' }).first())?.n ?? 0), 0, 'no audit row: nothing was decided');
  });

  it('still answers 404 for an unknown host (checked before Temporal)', async () => {
    const reply = await call('PUT', '/admin/agent/runner-hosts/no-such-host/slots', { slots: 6 });
    assert.equal(reply.status, 404);
  });

  it('answers 503 for a server release: the allocation stays `releasing` and the message says how to repeat it', async () => {
    const created = await fetch(`${api.url}/admin/agent/servers`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` }, body: JSON.stringify({ host_id: HOST }),
    });
    assert.equal(created.status, 201);
    const { allocation_id: id } = await created.json() as { allocation_id: string };
    const reply = await call('DELETE', `/admin/agent/servers/${id}`, { expected_revision: 1 });
    assert.equal(reply.status, 503);
    assert.match(reply.message, /could not be asked to drain: Temporal is unreachable .*Send the DELETE again with expected_revision 2/);
    const row = await t.db('agent_server_allocations').where({ id }).first<Record<string, unknown>>('state', 'revision');
    assert.deepEqual(row, { state: 'releasing', revision: 2 });
    const host = await t.db('agent_hosts').where({ host_id: HOST }).first<{ removal_requested_at: Date | null }>('removal_requested_at');
    assert.equal(host?.removal_requested_at, null, 'the host was not asked to drain');
  });

  it('answers 503 naming Temporal for a sandbox action and a sandbox batch (after the 404 of an unknown group), and changes nothing', async () => {
    await t.db('agent_sandboxes').insert({ group_id: 'grp_down', host_id: HOST, container_name: 'agent-grp-down', generation: 1, state: 'stopped' });
    const body = { container_id: 'a'.repeat(64), generation: 1 };
    assert.equal((await call('POST', '/admin/agent/sandboxes/grp_unknown/delete', body)).status, 404);
    const single = await call('POST', '/admin/agent/sandboxes/grp_down/delete', body);
    assert.equal(single.status, 503);
    assert.match(single.message, /^Temporal is unreachable \(no answer within 1 s\): the sandbox action was not carried out and nothing changed/);
    const batch = await call('POST', '/admin/agent/sandboxes/batch', { action: 'delete', items: [{ group_id: 'grp_down', ...body }] });
    assert.equal(batch.status, 503);
    assert.match(batch.message, /^Temporal is unreachable \(no answer within 1 s\): no action of the batch was carried out and nothing changed/);
    const row = await t.db('agent_sandboxes').where({ group_id: 'grp_down' }).first<Record<string, unknown>>('state', 'pending_action');
    assert.deepEqual(row, { state: 'stopped', pending_action: null });
  });
});
