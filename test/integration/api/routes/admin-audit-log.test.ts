/**
 * `GET /admin/agent/audit-log` over the real API and PostgreSQL (docs/agent-audit.md): operator
 * only, newest first, the category filter, `before` paging across pages, the limit's bounds and
 * default, 400s naming the parameter, and administrators named by user id, never by e-mail.
 */
import assert from 'node:assert/strict';
import { recordAudit, USER_DELETION_SWEEPER, type AuditCategory } from '../../../../agent/audit/audit-log';
import type { AuditLogPage } from '../../../../agent/audit/audit-query';
import { ADMIN_TOKEN } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

interface Reply<T> { status: number; body: T }
interface ErrorBody { error: { message: string; param: string | null } }

const OPERATOR_EMAIL = 'audit-operator@example.test';

describe('admin: agent audit log route (PostgreSQL)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let operatorId: number;
  let operatorToken: string;
  let ownerToken: string;
  /** Ids of the rows this file wrote, newest first, with their categories. */
  const written: Array<{ id: string; category: AuditCategory }> = [];

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    operatorId = await insertOwner(t.db, OPERATOR_EMAIL, { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'audit-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
    const categories: AuditCategory[] = ['hosts', 'settings', 'content', 'hosts', 'servers', 'deletion', 'hosts', 'settings'];
    for (const [i, category] of categories.entries()) {
      const actor = category === 'deletion' ? USER_DELETION_SWEEPER : { type: 'user' as const, userId: operatorId };
      const { id } = await recordAudit(t.db, {
        category, action: `agent.test.${category}`, actor, actorIp: category === 'deletion' ? null : '203.0.113.9',
        target: { type: 'thing', id: `t${i}` }, outcome: 'succeeded', details: { i },
      });
      written.unshift({ id, category });
    }
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  async function get<T = AuditLogPage>(query = '', token: string | null = ADMIN_TOKEN): Promise<Reply<T>> {
    const res = await fetch(`${api.url}/admin/agent/audit-log${query}`, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as T };
  }

  it('is for operators only: 401 without or with a wrong token, 403 for an owner without agent.admin', async () => {
    assert.equal((await get('', null)).status, 401);
    assert.equal((await get('', 'wrong-token')).status, 401);
    assert.equal((await get('', ownerToken)).status, 403);
    assert.equal((await get('', operatorToken)).status, 200);
    assert.equal((await get('', ADMIN_TOKEN)).status, 200);
    assert.equal(api.routes.find((r) => r.path === '/admin/agent/audit-log')?.access, 'operator');
  });

  it('lists newest first with each entry in full, administrators named by user id and never by e-mail', async () => {
    const page = await get();
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.entries.map((e) => e.id), written.map((w) => w.id));
    assert.equal(page.body.next_before, null, 'everything fits the default page');
    const newest = page.body.entries[0]!;
    assert.deepEqual(Object.keys(newest).sort(), ['action', 'actor', 'actor_ip', 'category', 'created_at', 'details', 'id', 'outcome', 'reason', 'source', 'target']);
    assert.deepEqual(
      [newest.category, newest.action, newest.source, newest.actor, newest.actor_ip, newest.target, newest.outcome, newest.details],
      ['settings', 'agent.test.settings', 'admin', { type: 'user', user_id: operatorId }, '203.0.113.9', { type: 'thing', id: 't7' }, 'succeeded', { i: 7 }],
    );
    const sweep = page.body.entries.find((e) => e.category === 'deletion')!;
    assert.deepEqual([sweep.source, sweep.actor, sweep.actor_ip], ['system', { type: 'system', name: 'user-deletion-sweeper' }, null]);
    assert.ok(!JSON.stringify(page.body).includes(OPERATOR_EMAIL), 'no e-mail in the log');
    const times = page.body.entries.map((e) => Date.parse(e.created_at));
    assert.deepEqual([...times].sort((a, b) => b - a), times, 'newest first by time too');
  });

  it('pages by before (the oldest id of the previous page) across three pages, with no gap and no repeat', async () => {
    const first = await get('?limit=3');
    assert.deepEqual(first.body.entries.map((e) => e.id), written.slice(0, 3).map((w) => w.id));
    assert.equal(first.body.next_before, written[2]!.id);
    const second = await get(`?limit=3&before=${first.body.next_before}`);
    assert.deepEqual(second.body.entries.map((e) => e.id), written.slice(3, 6).map((w) => w.id));
    const third = await get(`?limit=3&before=${second.body.next_before}`);
    assert.deepEqual(third.body.entries.map((e) => e.id), written.slice(6).map((w) => w.id));
    assert.equal(third.body.entries.length, 2);
    assert.equal(third.body.next_before, null, 'the last page says so');
    const beyond = await get(`?before=${written[written.length - 1]!.id}`);
    assert.deepEqual(beyond.body, { entries: [], next_before: null });
  });

  it('filters by category, paging within it', async () => {
    const hosts = written.filter((w) => w.category === 'hosts').map((w) => w.id);
    const all = await get('?category=hosts');
    assert.deepEqual(all.body.entries.map((e) => e.id), hosts);
    assert.ok(all.body.entries.every((e) => e.category === 'hosts'));
    const first = await get('?category=hosts&limit=2');
    assert.deepEqual(first.body.entries.map((e) => e.id), hosts.slice(0, 2));
    const rest = await get(`?category=hosts&limit=2&before=${first.body.next_before}`);
    assert.deepEqual(rest.body.entries.map((e) => e.id), hosts.slice(2));
    assert.equal(rest.body.next_before, null);
    for (const category of ['settings', 'servers', 'measurements', 'content']) {
      const page = await get(`?category=${category}`);
      assert.equal(page.status, 200, `the filter value ${category}`);
      assert.deepEqual(page.body.entries.map((e) => e.id), written.filter((w) => w.category === category).map((w) => w.id));
    }
  });

  it('defaults to 50 entries and accepts 1 to 200', async () => {
    for (let i = 0; i < 52; i++) {
      await recordAudit(t.db, { category: 'measurements', action: 'agent.test.bulk', actor: { type: 'admin_token' }, outcome: 'succeeded' });
    }
    const page = await get();
    assert.equal(page.body.entries.length, 50);
    assert.notEqual(page.body.next_before, null);
    assert.equal((await get('?limit=1')).body.entries.length, 1);
    assert.equal((await get('?limit=200')).body.entries.length, 52 + written.length);
  });

  it('refuses bad parameters with 400 naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['?limit=0', 'limit'], ['?limit=201', 'limit'], ['?limit=abc', 'limit'], ['?limit=1.5', 'limit'], ['?limit=-1', 'limit'], ['?limit=', 'limit'],
      ['?before=0', 'before'], ['?before=abc', 'before'], ['?before=-5', 'before'], ['?before=1e3', 'before'], ['?before=99999999999999999999', 'before'],
      ['?category=everything', 'category'], ['?category=HOSTS', 'category'], ['?category=hosts&category=content', 'category'],
      ['?limit=2&limit=3', 'limit'],
    ];
    for (const [query, param] of cases) {
      const res = await get<ErrorBody>(query);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.param, param, query);
      assert.match(res.body.error.message, new RegExp(param), query);
    }
    const unknown = await get<ErrorBody>('?cursor=5');
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /cursor/);
  });
});
