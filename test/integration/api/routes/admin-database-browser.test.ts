/**
 * The database browser over the real API and PostgreSQL (docs/agent-admin.md "Database browser"):
 * - operator only, and each request re-checks the account's current `agent.admin`;
 * - the visible schema leaves secrets out and a query cannot name them;
 * - filters are ANDed, `contains` is a literal case-insensitive substring, values that look like
 *   SQL are bound and match literally, sort and paging are stable;
 * - long cells are cut and listed, a page stops at its byte budget;
 * - the statement timeout answers 503 and discloses nothing; every answered query is audited first.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid, errorOf, type AdminResponse } from '../../../support/admin';
import { insertOwner } from '../../../support/agent-rows';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';

type Page = {
  table: string;
  columns: string[];
  rows: Array<Record<string, unknown>>;
  truncated: Array<{ row: number; column: string; length: number }>;
  limit: number;
  offset: number;
  has_more: boolean;
  next_offset: number | null;
};
interface SchemaView { tables: Array<{ name: string; primary_key: string[]; columns: Array<{ name: string; type: string; operators: string[] }> }>; limits: Record<string, number> }

/** Values stored as `login_events.user_agent` (outcome `lit`) that look like SQL or LIKE patterns. */
const LITERALS = [
  '100% sure', '100 sure', 'a_b', 'axb', 'back\\slash', 'backslash', "O'Brien", "'; drop table users; --", "' or '1'='1",
  'Robert\'); DROP TABLE agent_jobs;--', 'pg_sleep(5)', '%', '_', '\\', '?', '$1', 'UPPER Case', '/* c */', '"quoted"',
];

describe('admin: database browser (PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let operatorId: number;
  let operatorToken: string;
  let ownerToken: string;
  /** SQL the API ran through the test database's pool. */
  const statements: Array<{ sql: string; bindings: unknown[] }> = [];

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    t.db.on('query', (q: { sql: string; bindings?: unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] }));
    operatorId = await insertOwner(t.db, 'browser-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    const ownerId = await insertOwner(t.db, 'browser-owner@example.test', { permissions: ['agent.use'] });
    ownerToken = api.deps.tokens.issue({ id: ownerId, role: 'pro' }).access_token;
    await t.db('login_events').insert(LITERALS.map((ua, i) => ({ outcome: 'lit', user_agent: ua, ip: i % 2 === 0 ? 'even' : 'odd' })));
    await t.db('login_events').insert({ outcome: 'lit', user_agent: null, ip: null });
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const query = (body: unknown, token: string | null = ADMIN_TOKEN, on: Pick<TestApi, 'url'> = api) => admin<Page>(on, 'POST', '/admin/agent/database/query', body, token);
  const lit = (filters: unknown[], extra: Record<string, unknown> = {}) => query({ table: 'login_events', columns: ['user_agent'], filters: [{ column: 'outcome', op: 'eq', value: 'lit' }, ...filters], limit: 200, ...extra });
  const agents = (res: AdminResponse<Page>) => {
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.rows.map((r) => r.user_agent);
  };
  const browserRuns = () => statements.filter((s) => s.sql.includes("set_config('statement_timeout'")).length;
  const auditCount = async () => Number((await t.db('agent_audit_log').where({ action: 'agent.database.query' }).count<Array<{ count: string }>>('* as count'))[0]?.count);

  it('is for operators only: 401 anonymous or with a wrong token, 403 for an owner, on both routes', async () => {
    for (const [token, status] of [[null, 401], ['wrong-token', 401], [ownerToken, 403]] as const) {
      assert.equal((await admin(api, 'GET', '/admin/agent/database/tables', undefined, token)).status, status);
      assert.equal((await query({ table: 'users' }, token)).status, status);
    }
    assert.equal(browserRuns(), 0, 'nothing ran');
    for (const path of ['/admin/agent/database/tables', '/admin/agent/database/query']) {
      assert.equal(api.routes.find((r) => r.path === path)?.access, 'operator', path);
    }
  });

  it('re-checks agent.admin on every request: withdrawn, the next query is 403; restored, 200', async () => {
    assert.equal((await query({ table: 'users', columns: ['id'] }, operatorToken)).status, 200);
    await t.db('users').where({ id: operatorId }).update({ permissions: [] });
    assert.equal((await query({ table: 'users', columns: ['id'] }, operatorToken)).status, 403);
    assert.equal((await admin(api, 'GET', '/admin/agent/database/tables', undefined, operatorToken)).status, 403);
    await t.db('users').where({ id: operatorId }).update({ permissions: ['agent.admin'] });
    assert.equal((await query({ table: 'users', columns: ['id'] }, operatorToken)).status, 200);
    await t.db('users').where({ id: operatorId }).update({ suspended_at: t.db.fn.now() });
    assert.equal((await query({ table: 'users', columns: ['id'] }, operatorToken)).status, 401, 'a suspended operator');
    await t.db('users').where({ id: operatorId }).update({ suspended_at: null });
  });

  it('lists the visible schema without secrets, and a query cannot name a hidden column', async () => {
    const res = await admin<SchemaView>(api, 'GET', '/admin/agent/database/tables');
    assert.equal(res.status, 200);
    const users = res.body.tables.find((table) => table.name === 'users')!;
    assert.deepEqual(users.primary_key, ['id']);
    assert.deepEqual(users.columns.map((c) => c.name), ['id', 'role', 'permissions', 'email_verified_at', 'suspended_at', 'deleted_at', 'created_at', 'updated_at']);
    assert.deepEqual(users.columns.find((c) => c.name === 'permissions')?.operators, ['contains', 'is_null', 'not_null']);
    const names = res.body.tables.map((table) => table.name);
    for (const table of ['agent_jobs', 'agent_sandboxes', 'agent_audit_log', 'api_logs', 'login_events']) assert.ok(names.includes(table), table);
    for (const table of ['email_outbox', 'refresh_sessions', 'email_verifications']) assert.ok(!names.includes(table), table);
    const text = JSON.stringify(res.body);
    for (const secret of ['password_hash', 'key_hash', 'token_hash', 'credential_hash', 'sealed', 'fingerprint', '"email"', '"payload"', '"prompt"']) {
      assert.ok(!text.includes(secret), secret);
    }
    assert.equal(res.body.limits.statement_timeout_ms, 5000);
    assertInvalid(await query({ table: 'users', columns: ['password_hash'] }), 'columns.0');
    assertInvalid(await query({ table: 'agent_settings', filters: [{ column: 'sealed', op: 'not_null' }] }), 'filters.0.column');
  });

  it('contains is a literal, case-insensitive substring: %, _ and \\ match themselves', async () => {
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: '%' }])), ['100% sure', '%']);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: '_' }])), ['a_b', 'Robert\'); DROP TABLE agent_jobs;--', 'pg_sleep(5)', '_']);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: '\\' }])), ['back\\slash', '\\']);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: 'upper case' }])), ['UPPER Case']);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: 'BACK' }])), ['back\\slash', 'backslash']);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value: 'a%b' }])), [], 'no wildcard');
  });

  it('values that look like SQL are bound, never written into the statement, and match literally', async () => {
    /** The browser's SELECTs of one eq and one contains query for `value`. */
    const selects = async (value: string) => {
      statements.length = 0;
      assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'eq', value }])), value === 'axb' ? ['axb'] : [value], `eq ${value}`);
      assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'contains', value }])), [value], `contains ${value}`);
      const select = statements.filter((s) => s.sql.includes('from "public"."login_events"'));
      assert.equal(select.length, 2);
      return select;
    };
    const reference = (await selects('axb')).map((s) => s.sql);
    for (const value of ["'; drop table users; --", "' or '1'='1", 'Robert\'); DROP TABLE agent_jobs;--', 'pg_sleep(5)', '?', '$1', '/* c */', '"quoted"']) {
      const select = await selects(value);
      assert.deepEqual(select.map((s) => s.sql), reference, `the statement text does not depend on the value ${value}`);
      for (const s of select) assert.ok(s.bindings.includes(value), 'the value is a bound parameter');
    }
    assert.equal(await t.db.schema.hasTable('agent_jobs'), true);
    assert.ok(Number((await t.db('users').count<Array<{ count: string }>>('* as count'))[0]?.count) >= 2);
  });

  it('ANDs filters, tests nulls, compares numbers given as strings, and returns only the asked columns', async () => {
    const both = await lit([{ column: 'user_agent', op: 'contains', value: 'sure' }, { column: 'ip', op: 'eq', value: 'even' }], { columns: ['user_agent', 'ip'] });
    assert.deepEqual(both.body.rows, [{ user_agent: '100% sure', ip: 'even' }]);
    assert.deepEqual(agents(await lit([{ column: 'user_agent', op: 'is_null' }])), [null]);
    assert.equal(agents(await lit([{ column: 'user_agent', op: 'not_null' }])).length, LITERALS.length);
    assert.equal(agents(await lit([{ column: 'ip', op: 'ne', value: 'even' }])).length, Math.floor(LITERALS.length / 2) + 1, 'ne keeps other values and nulls');
    const ids = (await lit([], { columns: ['id'] })).body.rows.map((r) => String(r.id));
    const after = await lit([{ column: 'id', op: 'gt', value: ids[2] }, { column: 'id', op: 'lte', value: Number(ids[4]) }], { columns: ['id'] });
    assert.deepEqual(after.body.rows.map((r) => String(r.id)), ids.slice(3, 5));
    const sinceNow = await lit([{ column: 'created_at', op: 'gt', value: new Date(Date.now() + 3_600_000).toISOString() }]);
    assert.deepEqual(agents(sinceNow), []);
  });

  it('sorts by a column with the primary key breaking ties, and pages by offset without gaps or repeats', async () => {
    const all = (await lit([], { columns: ['id', 'ip'] })).body.rows;
    const sorted = await lit([], { columns: ['id', 'ip'], sort: { column: 'ip', direction: 'desc' } });
    // Descending puts nulls first (PostgreSQL's default), then ties by id, descending too.
    const rank = (ip: unknown) => (ip === null ? 0 : ip === 'odd' ? 1 : 2);
    const expected = [...all].sort((a, b) => rank(a.ip) - rank(b.ip) || Number(b.id) - Number(a.id));
    assert.deepEqual(new Set(all.map((r) => r.ip)), new Set([null, 'odd', 'even']));
    assert.deepEqual(sorted.body.rows, expected);
    const seen: unknown[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: AdminResponse<Page> = await lit([], { columns: ['id'], limit: 7, offset });
      assert.equal(page.status, 200);
      assert.ok(page.body.rows.length <= 7);
      seen.push(...page.body.rows.map((r) => r.id));
      offset = page.body.next_offset;
      assert.equal(page.body.has_more, offset !== null);
    }
    assert.deepEqual(seen, all.map((r) => r.id));
    const first = await query({ table: 'login_events', columns: ['id'] });
    assert.deepEqual([first.body.limit, first.body.offset], [50, 0], 'defaults');
  });

  it('cuts a long text or JSON cell to 4,000 characters and lists it; a page stops at its byte budget', async () => {
    await t.db('login_events').insert({ outcome: 'long', user_agent: 'u'.repeat(10_000) });
    const long = await query({ table: 'login_events', columns: ['user_agent'], filters: [{ column: 'outcome', op: 'eq', value: 'long' }] });
    assert.equal((long.body.rows[0]!.user_agent as string).length, 4000);
    assert.deepEqual(long.body.truncated, [{ row: 0, column: 'user_agent', length: 10_000 }]);
    await t.db('agent_audit_log').insert({ category: 'hosts', action: 'agent.test.big', source: 'system', actor_type: 'system', actor_name: 'test', outcome: 'succeeded', details: { blob: 'j'.repeat(6000) } });
    const json = await query({ table: 'agent_audit_log', columns: ['details'], filters: [{ column: 'action', op: 'eq', value: 'agent.test.big' }] });
    assert.match(json.body.rows[0]!.details as string, /^\{"blob": "j{3990}/);
    assert.equal(json.body.truncated[0]?.column, 'details');

    const wide = 'é'.repeat(5000);
    await t.db('login_events').insert(Array.from({ length: 200 }, () => ({ outcome: 'bulk', user_agent: wide, ip: wide })));
    const bulk = { table: 'login_events', columns: ['id', 'user_agent', 'ip'], filters: [{ column: 'outcome', op: 'eq', value: 'bulk' }], limit: 200 };
    const page = await query(bulk);
    assert.equal(page.status, 200);
    const bytes = Buffer.byteLength(JSON.stringify(page.body.rows));
    assert.ok(bytes <= 1024 * 1024 && page.body.rows.length > 10 && page.body.rows.length < 200, `${page.body.rows.length} rows, ${bytes} bytes`);
    assert.deepEqual([page.body.has_more, page.body.next_offset], [true, page.body.rows.length]);
    assert.equal(page.body.truncated.length, page.body.rows.length * 2);
    const next = await query({ ...bulk, offset: page.body.next_offset });
    assert.ok(Number(next.body.rows[0]!.id) > Number(page.body.rows.at(-1)!.id), 'the next page starts after the last row');
  });

  it('audits each answered query before answering (table, filters, paging; never for the schema or a refusal); no audit row, no rows', async () => {
    const before = await auditCount();
    await admin(api, 'GET', '/admin/agent/database/tables', undefined, operatorToken);
    await query({ table: 'nope' }, operatorToken);
    assert.equal(await auditCount(), before);
    const res = await query({ table: 'login_events', columns: ['id'], filters: [{ column: 'user_agent', op: 'contains', value: 'sure' }], sort: { column: 'id', direction: 'desc' }, limit: 5 }, operatorToken);
    assert.equal(res.status, 200);
    const row = await t.db('agent_audit_log').where({ action: 'agent.database.query' }).orderBy('id', 'desc').first<Record<string, unknown>>();
    assert.deepEqual(
      [row?.category, row?.source, Number(row?.actor_user_id), row?.target_type, row?.target_id, row?.outcome],
      ['database', 'admin', operatorId, 'database_table', 'login_events', 'succeeded'],
    );
    assert.deepEqual(row?.details, {
      table: 'login_events', columns: ['id'], filters: [{ column: 'user_agent', op: 'contains', value: 'sure' }],
      sort: { column: 'id', direction: 'desc' }, limit: 5, offset: 0, rows: 2, has_more: false,
    });

    await t.db.raw("create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit refused'; end $$");
    await t.db.raw('create trigger refuse_audit before insert on agent_audit_log for each row execute function refuse_audit()');
    try {
      const refused = await query({ table: 'login_events', columns: ['user_agent'], filters: [{ column: 'user_agent', op: 'eq', value: "O'Brien" }] });
      assert.equal(refused.status, 503);
      assert.ok(!JSON.stringify(refused.body).includes("O'Brien"), 'nothing disclosed');
    } finally {
      await t.db.raw('drop trigger refuse_audit on agent_audit_log');
      await t.db.raw('drop function refuse_audit()');
    }
  });

  it('answers 503 naming the statement timeout when a query runs past it, discloses and audits nothing, then works again', async () => {
    const slow = await startTestApi({ db: t.db, env: { AGENT_DATABASE_QUERY_TIMEOUT_MS: '300' } });
    const holder = await t.db.transaction();
    try {
      await holder.raw('lock table login_events in access exclusive mode');
      const audits = await auditCount();
      const res = await query({ table: 'login_events', columns: ['user_agent'] }, ADMIN_TOKEN, slow);
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.match((res.body as unknown as { error: { message: string } }).error.message, /statement timeout \(300 ms\)/);
      assert.equal(await auditCount(), audits);
      await holder.rollback();
      assert.equal((await query({ table: 'login_events', columns: ['user_agent'] }, ADMIN_TOKEN, slow)).status, 200);
    } finally {
      if (!holder.isCompleted()) await holder.rollback();
      await slow.close();
    }
  });

  it('answers 400 naming filters for a value PostgreSQL cannot hold in the column', async () => {
    // Both pass the plan's shape checks; PostgreSQL refuses them (integer out of range, no 30 February).
    for (const filter of [{ column: 'status', op: 'eq', value: '99999999999' }, { column: 'created_at', op: 'gt', value: '2026-02-30' }]) {
      const res = await query({ table: 'api_logs', filters: [filter] });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(errorOf(res), { ...errorOf(res), param: 'filters', message: "Invalid field 'filters': a value does not fit its column's type or range" });
    }
  });
});
