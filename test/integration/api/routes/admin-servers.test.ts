/**
 * Server allocations over the real API and PostgreSQL (docs/agent-hosts.md "Server
 * allocations"): operator only on every route; create, list (state filter, paging), show; the
 * refusals that change nothing (400 naming the field for malformed ids, bodies and queries, 404
 * unknown, 409 already allocated or draining, 409 a stale revision naming the current one); the
 * audit rows; `DELETE /admin/agent/runner-hosts/<host>` refused for an allocated host; the
 * migration's `down` refusing while rows exist. Releases through the host workflow are in
 * admin-servers-release.test.ts (they need Temporal; nothing here reaches it).
 */
import assert from 'node:assert/strict';
import { migrations } from '../../../../migrations';
import type { AllocationPage, AllocationView } from '../../../../agent/servers/server-allocations';
import { admin, ADMIN_TOKEN, assertInvalid, errorOf } from '../../../support/admin';
import { insertHost, insertJobWithTurn, insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

interface AuditRow { category: string; action: string; actor_type: string; actor_user_id: string | null; target_type: string; target_id: string; outcome: string; reason: string | null; details: Record<string, unknown> }

describe('admin: server allocations (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  let operatorId: number;
  let operatorToken: string;
  let ownerToken: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    operatorId = await insertOwner(t.db, 'servers-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'servers-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const call = <T = AllocationView>(method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN) => admin<T>(api, method, path, body, token);
  const create = (hostId: string, label?: string, token: string | null = ADMIN_TOKEN) =>
    call('POST', '/admin/agent/servers', label === undefined ? { host_id: hostId } : { host_id: hostId, label }, token);
  /** A call whose answer is read as an error (or not at all). */
  const raw = (method: string, path: string, body?: unknown) => admin(api, method, path, body);
  const release = (id: string, body: unknown) => raw('DELETE', `/admin/agent/servers/${id}`, body);
  const rowsOf = () => t.db('agent_server_allocations').orderBy('id');
  const auditRows = (action?: string) => (action ? t.db('agent_audit_log').where({ action }) : t.db('agent_audit_log').where({ category: 'servers' })).orderBy('id') as Promise<AuditRow[]>;
  /** A new host with an active allocation. */
  async function allocated(hostId: string, label?: string): Promise<AllocationView> {
    await insertHost(t.db, hostId);
    const res = await create(hostId, label);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  it('is for operators only on every route: 401 anonymous or a wrong token, 403 an owner without agent.admin; nothing changes', async () => {
    const { allocation_id: id } = await allocated('auth-host');
    const cases: Array<[string, string, unknown?]> = [
      ['POST', '/admin/agent/servers', { host_id: 'auth-host' }],
      ['GET', '/admin/agent/servers'],
      ['GET', `/admin/agent/servers/${id}`],
      ['DELETE', `/admin/agent/servers/${id}`, { expected_revision: 1 }],
    ];
    const audited = (await auditRows()).length;
    for (const [method, path, body] of cases) {
      assert.equal((await call(method, path, body, null)).status, 401, `${method} ${path} anonymous`);
      assert.equal((await call(method, path, body, 'wrong-token')).status, 401, `${method} ${path} wrong token`);
      assert.equal((await call(method, path, body, ownerToken)).status, 403, `${method} ${path} without agent.admin`);
      const route = path.endsWith(id) ? '/admin/agent/servers/:allocation_id' : path;
      assert.equal(api.routes.find((r) => r.path === route && r.methods.includes(method))?.access, 'operator', `${method} ${route}`);
    }
    assert.deepEqual((await rowsOf()).map((r: { state: string; revision: number }) => [r.state, r.revision]), [['active', 1]]);
    assert.equal((await auditRows()).length, audited, 'refused callers write nothing');
    assert.equal((await call('GET', `/admin/agent/servers/${id}`, undefined, operatorToken)).status, 200);
  });

  it('creates an allocation (201, revision 1, active, audited), shows it alone and in the list with what holds its host', async () => {
    await insertHost(t.db, 'gpu-create');
    const res = await create('gpu-create', 'rack 3, slot 7', operatorToken);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const view = res.body;
    assert.match(view.allocation_id, /^[1-9][0-9]*$/);
    assert.deepEqual(
      [view.host_id, view.label, view.state, view.revision, view.held, view.released_at, view.released_by, view.created_by],
      ['gpu-create', 'rack 3, slot 7', 'active', 1, [], null, null, { type: 'user', user_id: operatorId }],
    );
    const ownerId = await insertOwner(t.db, 'servers-held@example.test');
    await insertJobWithTurn(t.db, ownerId, 'gpu-create');
    const shown = await call('GET', `/admin/agent/servers/${view.allocation_id}`);
    assert.equal(shown.status, 200);
    assert.deepEqual(shown.body, { ...view, held: ['1 chat(s) placed on it'] });
    const listed = await call<AllocationPage>('GET', '/admin/agent/servers');
    assert.deepEqual(listed.body.allocations.find((a) => a.allocation_id === view.allocation_id), shown.body);
    const [audit] = await auditRows('agent.server.create').then((rows) => rows.filter((r) => r.target_id === view.allocation_id));
    assert.deepEqual(
      [audit?.category, audit?.outcome, audit?.actor_type, Number(audit?.actor_user_id), audit?.target_type, audit?.details],
      ['servers', 'succeeded', 'user', operatorId, 'server_allocation', { allocation_id: view.allocation_id, host_id: 'gpu-create', label: 'rack 3, slot 7', revision: 1 }],
    );
  });

  it('refuses to allocate an unknown or removed host (404), an allocated or draining host (409, audited), bad bodies (400 naming the field)', async () => {
    const before = (await rowsOf()).length;
    assert.equal((await create('no-such-host')).status, 404);
    await insertHost(t.db, 'gone-host');
    await t.db('agent_hosts').where({ host_id: 'gone-host' }).update({ removed_at: t.db.fn.now() });
    assert.equal((await create('gone-host')).status, 404);
    await insertHost(t.db, 'draining-host', { removalRequested: true });
    const draining = await raw('POST', '/admin/agent/servers', { host_id: 'draining-host' });
    assert.equal(draining.status, 409);
    assert.match(errorOf(draining).message, /being removed/);
    const first = await allocated('taken-host');
    const taken = await raw('POST', '/admin/agent/servers', { host_id: 'taken-host' });
    assert.equal(taken.status, 409);
    assert.match(errorOf(taken).message, new RegExp(`allocation ${first.allocation_id} \\(active\\).*DELETE /admin/agent/servers/${first.allocation_id}`));
    const refused = (await auditRows('agent.server.create')).filter((r) => r.outcome === 'refused');
    assert.deepEqual(refused.map((r) => [r.target_type, r.target_id]), [['host', 'draining-host'], ['host', 'taken-host']]);
    const bad: Array<[unknown, string]> = [
      [{}, 'host_id'], [{ host_id: 7 }, 'host_id'], [{ host_id: 'Not A Host!' }, 'host_id'], [{ host_id: 'a'.repeat(64) }, 'host_id'],
      [{ host_id: 'gpu-bad', label: '' }, 'label'], [{ host_id: 'gpu-bad', label: 'x'.repeat(201) }, 'label'], [{ host_id: 'gpu-bad', label: 5 }, 'label'],
      [{ host_id: 'gpu-bad', label: 'a\u0000b' }, 'label'], [{ host_id: 'gpu-bad', label: 'a\uD800b' }, 'label'], [{ host_id: 'gpu-bad', extra: 1 }, 'extra'],
      [{ host_id: 'gpu\u0000bad' }, 'host_id'], [[], 'body'], ['{"host_id":', 'JSON'],
    ];
    await insertHost(t.db, 'gpu-bad');
    for (const [body, field] of bad) assertInvalid(await raw('POST', '/admin/agent/servers', body), field);
    assert.equal((await rowsOf()).length, before + 1, 'only taken-host was allocated');
    assert.equal((await create('gpu-bad', 'x'.repeat(200))).status, 201, '200 characters is the bound');
  });

  it('allocates a host once when two operators ask at the same moment: one 201, one 409', async () => {
    await insertHost(t.db, 'gpu-twice');
    const answers = await Promise.all([create('gpu-twice', 'first'), create('gpu-twice', 'second')]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [201, 409]);
    assert.equal((await t.db('agent_server_allocations').where({ host_id: 'gpu-twice' })).length, 1);
  });

  it('refuses malformed allocation ids and release bodies with 400 naming them; unknown ids are 404; nothing changes', async () => {
    const { allocation_id: id } = await allocated('gpu-strict');
    for (const malformed of ['abc', '0', '01', '-1', '1.5', '1e3', '9223372036854775808', '99999999999999999999', '%20', 'a%00b']) {
      assertInvalid(await raw('GET', `/admin/agent/servers/${malformed}`), 'allocation_id');
      assertInvalid(await release(malformed, { expected_revision: 1 }), 'allocation_id');
    }
    const bodies: unknown[] = [
      undefined, {}, { expected_revision: '1' }, { expected_revision: 1.5 }, { expected_revision: 0 }, { expected_revision: -1 }, { expected_revision: null },
      { expected_revision: true }, { expected_revision: [1] }, { expected_revision: 2147483648 }, '{"expected_revision":9007199254740993}',
      { expected_revision: 'a\u0000b' }, { expected_revision: 1, force: true }, '{"expected_revision":1e309}', '{"expected_revision":1e400}', '{"expected_revision":',
    ];
    for (const body of bodies) {
      const res = await release(id, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      assert.match(errorOf(res).message, typeof body === 'object' && body !== null && 'force' in body ? /force/ : /expected_revision|JSON|body/);
    }
    assert.equal((await call('GET', '/admin/agent/servers/9223372036854775807')).status, 404);
    assert.equal((await release('9223372036854775807', { expected_revision: 1 })).status, 404);
    const row = await t.db('agent_server_allocations').where({ id }).first<{ state: string; revision: number }>();
    assert.deepEqual([row?.state, row?.revision], ['active', 1]);
    assert.equal((await auditRows('agent.server.delete')).length, 0, 'nothing was audited as a release');
  });

  it('answers a stale revision with 409 naming the current one and saying to refresh; nothing changes; audited refused', async () => {
    const view = await allocated('gpu-stale');
    for (const stale of [2, 7]) {
      const res = await release(view.allocation_id, { expected_revision: stale });
      assert.equal(res.status, 409);
      assert.match(errorOf(res).message, new RegExp(`at revision 1, not ${stale}.*Refresh it \\(GET /admin/agent/servers/${view.allocation_id}\\).*expected_revision 1`));
    }
    assert.deepEqual((await call('GET', `/admin/agent/servers/${view.allocation_id}`)).body, view, 'nothing changed, updated_at included');
    const refused = (await auditRows('agent.server.delete')).filter((r) => r.target_id === view.allocation_id);
    assert.deepEqual(refused.map((r) => [r.outcome, r.details]), [
      ['refused', { allocation_id: view.allocation_id, host_id: 'gpu-stale', expected_revision: 2, revision: 1 }],
      ['refused', { allocation_id: view.allocation_id, host_id: 'gpu-stale', expected_revision: 7, revision: 1 }],
    ]);
    assert.match(refused[0]!.reason ?? '', /revision 1, not 2/);
  });

  it('refuses DELETE /admin/agent/runner-hosts/<host> for an allocated host with 409 naming the allocation; the host stays', async () => {
    const view = await allocated('gpu-guarded');
    const res = await raw('DELETE', '/admin/agent/runner-hosts/gpu-guarded');
    assert.equal(res.status, 409);
    assert.match(errorOf(res).message, new RegExp(`server allocation ${view.allocation_id}, active.*DELETE /admin/agent/servers/${view.allocation_id}`));
    const host = await t.db('agent_hosts').where({ host_id: 'gpu-guarded' }).first<{ removal_requested_at: Date | null; removed_at: Date | null }>();
    assert.deepEqual([host?.removal_requested_at, host?.removed_at], [null, null]);
    const [audit] = await t.db('agent_audit_log').where({ target_type: 'host', target_id: 'gpu-guarded' }) as AuditRow[];
    assert.deepEqual([audit?.category, audit?.action, audit?.outcome], ['hosts', 'agent.host.removed', 'refused']);
    assert.equal((await call('DELETE', '/admin/agent/runner-hosts/no-such-host')).status, 404, 'an unknown host is still 404');
  });

  it('lists allocations newest first with a state filter and paging by before; bad queries are 400 naming the parameter', async () => {
    const released = await allocated('gpu-list-a');
    await t.db('agent_server_allocations').where({ id: released.allocation_id })
      .update({ state: 'released', revision: 3, release_requested_at: t.db.fn.now(), released_at: t.db.fn.now() });
    const ids = [(await allocated('gpu-list-b')).allocation_id, (await allocated('gpu-list-c')).allocation_id];
    const list = async (query: string) => (await call<AllocationPage>('GET', `/admin/agent/servers${query}`)).body;
    const current = await list('');
    assert.ok(current.allocations.every((a) => a.state !== 'released'), 'the default lists what holds hosts');
    assert.deepEqual(current.allocations.slice(0, 2).map((a) => a.allocation_id), [...ids].reverse());
    assert.deepEqual((await list('?state=released')).allocations.map((a) => a.allocation_id), [released.allocation_id]);
    const all = await list('?state=all');
    assert.ok(all.allocations.some((a) => a.allocation_id === released.allocation_id) && all.allocations.some((a) => a.allocation_id === ids[0]));
    const firstPage = await list('?state=all&limit=2');
    assert.equal(firstPage.allocations.length, 2);
    assert.equal(firstPage.next_before, firstPage.allocations[1]!.allocation_id);
    const next = await list(`?state=all&limit=200&before=${firstPage.next_before}`);
    assert.deepEqual(next.allocations.map((a) => a.allocation_id), all.allocations.slice(2).map((a) => a.allocation_id));
    assert.equal(next.next_before, null);
    const badQueries: Array<[string, string]> = [
      ['state=gone', 'state'], ['limit=0', 'limit'], ['limit=201', 'limit'], ['limit=1.5', 'limit'], ['before=abc', 'before'], ['before=0', 'before'],
      ['page=2', 'page'], ['state=all&state=active', 'state'], ['state=a%00', 'state'],
    ];
    for (const [query, param] of badQueries) assertInvalid(await raw('GET', `/admin/agent/servers?${query}`), param);
  });

  it('keeps the migration reversible: down refuses while allocations exist, and reverts and re-applies once they are gone', async () => {
    const migration = migrations.find((m) => m.name === '20261126040000_agent_server_allocations')!;
    await assert.rejects(migration.down(t.db), /20261126040000_agent_server_allocations: table agent_server_allocations holds rows/);
    assert.ok((await rowsOf()).length > 0, 'nothing was dropped');
    const spare = await freshDatabase();
    try {
      await migration.down(spare.db);
      assert.equal(await spare.db.schema.hasTable('agent_server_allocations'), false);
      await migration.up(spare.db);
      assert.equal(await spare.db.schema.hasTable('agent_server_allocations'), true);
    } finally {
      await spare.drop();
    }
  });
});
