/**
 * SQL injection through every field of `POST /admin/agent/database/query` (docs/agent-admin.md
 * "Database browser"), table-driven over the real API and PostgreSQL: identifiers, columns, sort,
 * filter columns, operators, values, limit, offset and the body itself get quotes, semicolons,
 * comments, homoglyphs, NUL bytes, lone surrogates, `pg_sleep`, schema-qualified and catalog
 * names, very long names, arrays and objects where strings belong, huge and negative numbers.
 * Each is a 400 naming the field, and nothing runs: no read-only transaction is opened (the
 * statements the API sends are watched), no audit row is written, no data changes.
 */
import assert from 'node:assert/strict';
import { admin, ADMIN_TOKEN, assertInvalid } from '../../../support/admin';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { startTestApi, type TestApi } from '../../../support/api';

interface Case {
  /** What the body tries. */
  name: string;
  /** The body: an object (sent as JSON) or raw text. */
  body: unknown;
  /** The field the 400 must name. */
  field: string;
}

const ok = { table: 'login_events' };
const f = (filter: Record<string, unknown>) => ({ ...ok, filters: [filter] });
const LONG = 'users'.repeat(2000);

const TABLE_CASES: Case[] = [
  ...[
    'users; drop table users', 'users--', 'users -- comment', 'users/*x*/', '"users"', 'users" where 1=1 --', "users' or '1'='1",
    'public.users', 'public."users"', 'pg_catalog.pg_authid', 'pg_authid', 'pg_shadow', 'pg_user', 'pg_stat_activity', 'information_schema.columns',
    'USERS', 'Users', 'users ', ' users', 'users\n', 'usеrs' /* Cyrillic е */, 'ｕsers' /* fullwidth u */, 'us\u200bers' /* zero-width space */,
    'users\u202e', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', '*', 'email_outbox', 'refresh_sessions', 'email_verifications',
    'knex_migrations_lock', '(select 1)', 'users, pg_sleep(5)', 'pg_sleep(5)', LONG,
  ].map((table) => ({ name: `table ${JSON.stringify(table.slice(0, 40))}`, body: { table }, field: 'table' })),
  { name: 'table with a NUL byte', body: { table: 'users\u0000' }, field: 'table' },
  { name: 'table with a lone surrogate', body: { table: 'users\uD800' }, field: 'table' },
  { name: 'table as an array', body: { table: ['users'] }, field: 'table' },
  { name: 'table as an object', body: { table: { name: 'users' } }, field: 'table' },
  { name: 'table as a number', body: { table: 42 }, field: 'table' },
  { name: 'table null', body: { table: null }, field: 'table' },
  { name: 'table missing', body: { columns: ['id'] }, field: 'table' },
];

const COLUMN_CASES: Case[] = [
  ...[
    'email', '*', 'count(*)', 'id; drop table users', 'id--', '"id"', 'login_events.id', 'public.login_events.id', '(select password_hash from users limit 1)',
    'pg_sleep(5)', 'ID', 'іd' /* Cyrillic і */, 'id ', '', 'hasOwnProperty', '__proto__', 'ctid', 'xmin', 'oid', LONG,
  ].map((column) => ({ name: `column ${JSON.stringify(column.slice(0, 40))}`, body: { ...ok, columns: ['ip', column] }, field: 'columns.1' })),
  { name: 'column with a NUL byte', body: { ...ok, columns: ['id\u0000'] }, field: 'columns.0' },
  { name: 'column with a lone surrogate', body: { ...ok, columns: ['\uDC00id'] }, field: 'columns.0' },
  { name: 'column nested in an array', body: { ...ok, columns: [['id']] }, field: 'columns.0' },
  { name: 'column as an object', body: { ...ok, columns: [{ name: 'id' }] }, field: 'columns.0' },
  { name: 'columns as a string', body: { ...ok, columns: 'id' }, field: 'columns' },
  { name: 'columns empty', body: { ...ok, columns: [] }, field: 'columns' },
  { name: 'a column named twice', body: { ...ok, columns: ['id', 'id'] }, field: 'columns.1' },
];

const SORT_CASES: Case[] = [
  ...['id; drop table users', 'id desc', '1', 'random()', 'pg_sleep(5)', '"id"', 'email', 'login_events.id', 'іd', '', LONG].map((column) => ({
    name: `sort column ${JSON.stringify(column.slice(0, 40))}`, body: { ...ok, sort: { column } }, field: 'sort.column',
  })),
  ...['asc; drop table users', 'ASC', 'desc nulls first', 'аsc' /* Cyrillic а */, '', 'up'].map((direction) => ({
    name: `sort direction ${JSON.stringify(direction)}`, body: { ...ok, sort: { column: 'id', direction } }, field: 'sort.direction',
  })),
  { name: 'sort as a string', body: { ...ok, sort: 'id desc' }, field: 'sort' },
  { name: 'sort as an array', body: { ...ok, sort: [{ column: 'id' }] }, field: 'sort' },
  { name: 'sort column as an array', body: { ...ok, sort: { column: ['id'] } }, field: 'sort.column' },
  { name: 'sort with a stray key', body: { ...ok, sort: { column: 'id', using: '<' } }, field: 'using' },
];

const FILTER_CASES: Case[] = [
  ...['id = 1 or 1=1 --', 'email', 'password_hash', 'lower(user_agent)', 'user_agent::text', '"ip"', 'іp', 'pg_sleep(5)', LONG].map((column) => ({
    name: `filter column ${JSON.stringify(column.slice(0, 40))}`, body: f({ column, op: 'eq', value: 'x' }), field: 'filters.0.column',
  })),
  ...['= 1 or 1=1; --', 'like', 'ilike', '=', 'EQ', 'еq' /* Cyrillic е */, 'in', 'between', 'similar to', 'contains; drop table users', '', 'ne\u0000'].map((op) => ({
    name: `operator ${JSON.stringify(op)}`, body: f({ column: 'ip', op, value: 'x' }), field: 'filters.0.op',
  })),
  { name: 'contains on an integer column', body: f({ column: 'id', op: 'contains', value: '1' }), field: 'filters.0.op' },
  ...["1; drop table users", '1 or 1=1', '1)--', 'pg_sleep(5)', '0x10', '1e3', ' 1', '١٢٣' /* Arabic-Indic digits */].map((value) => ({
    name: `integer value ${JSON.stringify(value)}`, body: f({ column: 'id', op: 'eq', value }), field: 'filters.0.value',
  })),
  ...["now() - interval '1 day'", "2026-01-01'; drop table users; --", 'yesterday', 'infinity', '2026-13-01'].map((value) => ({
    name: `timestamp value ${JSON.stringify(value)}`, body: f({ column: 'created_at', op: 'gt', value }), field: 'filters.0.value',
  })),
  { name: 'value as an array', body: f({ column: 'ip', op: 'eq', value: ['a', 'b'] }), field: 'filters.0.value' },
  { name: 'value as an object', body: f({ column: 'ip', op: 'eq', value: { $ne: null } }), field: 'filters.0.value' },
  { name: 'value null', body: f({ column: 'ip', op: 'eq', value: null }), field: 'filters.0.value' },
  { name: 'value missing', body: f({ column: 'ip', op: 'eq' }), field: 'filters.0.value' },
  { name: 'value with a NUL byte', body: f({ column: 'ip', op: 'eq', value: "a\u0000'; drop table users" }), field: 'filters.0.value' },
  { name: 'value with a lone surrogate', body: f({ column: 'ip', op: 'contains', value: 'a\uD800' }), field: 'filters.0.value' },
  { name: 'value over 1,000 characters', body: f({ column: 'ip', op: 'eq', value: 'x'.repeat(1001) }), field: 'filters.0.value' },
  { name: 'a number for a text column', body: f({ column: 'ip', op: 'eq', value: 1 }), field: 'filters.0.value' },
  { name: 'a value on is_null', body: f({ column: 'ip', op: 'is_null', value: "' or 1=1" }), field: 'filters.0.value' },
  { name: 'a stray key in a filter', body: f({ column: 'ip', op: 'eq', value: 'x', raw: 'or 1=1' }), field: 'raw' },
  { name: 'filters as an object', body: { ...ok, filters: { column: 'ip', op: 'eq', value: 'x' } }, field: 'filters' },
  { name: 'filters as a string', body: { ...ok, filters: "ip = 'x'" }, field: 'filters' },
  { name: 'a filter as a string', body: { ...ok, filters: ["ip = 'x'"] }, field: 'filters.0' },
  { name: 'seventeen filters', body: { ...ok, filters: Array.from({ length: 17 }, () => ({ column: 'ip', op: 'not_null' })) }, field: 'filters' },
];

const PAGING_CASES: Case[] = [
  ...[1_000_000, 201, 0, -1, 1.5, '10', '10; drop table users', 'all', 1e308, null, [10], { n: 10 }, true].map((limit) => ({
    name: `limit ${JSON.stringify(limit)}`, body: { ...ok, limit }, field: 'limit',
  })),
  ...[-1, -100, 100_001, 1e308, 0.5, '0', '1; select pg_sleep(5)', null, [0]].map((offset) => ({
    name: `offset ${JSON.stringify(offset)}`, body: { ...ok, offset }, field: 'offset',
  })),
  { name: 'limit beyond double range', body: '{"table":"login_events","limit":1e309}', field: 'limit' },
];

const BODY_CASES: Case[] = [
  { name: 'a stray sql field', body: { ...ok, sql: 'select * from users' }, field: 'sql' },
  { name: 'a stray where field', body: { ...ok, where: '1=1' }, field: 'where' },
  { name: 'a body that is SQL text', body: '"select * from users"', field: 'body' },
  { name: 'a body that is an array', body: [ok], field: 'body' },
  { name: 'malformed JSON', body: '{"table":"users"; drop table users}', field: 'body' },
  { name: 'no body', body: '', field: 'body' },
];

const CASES = [...TABLE_CASES, ...COLUMN_CASES, ...SORT_CASES, ...FILTER_CASES, ...PAGING_CASES, ...BODY_CASES];

describe('admin: database browser refuses injection through every field (PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let runs = 0;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    t.db.on('query', (q: { sql: string }) => {
      if (q.sql.includes("set_config('statement_timeout'")) runs += 1;
    });
    await t.db('login_events').insert({ outcome: 'ok', ip: '203.0.113.1', user_agent: 'seed' });
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const send = (body: unknown) => admin(api, 'POST', '/admin/agent/database/query', body, ADMIN_TOKEN);

  it('runs a valid query (the watch on statements sees a run)', async () => {
    const res = await send({ table: 'login_events', filters: [{ column: 'ip', op: 'eq', value: '203.0.113.1' }] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(runs, 1);
  });

  for (const c of CASES) {
    it(`refuses ${c.name} with 400 naming '${c.field}', running nothing`, async () => {
      const before = runs;
      const res = await send(c.body);
      assertInvalid(res, c.field);
      assert.equal(runs, before, 'no browser transaction was opened');
    });
  }

  it('wrote one audit row (the valid query) and changed nothing', async () => {
    const audits = await t.db('agent_audit_log').where({ action: 'agent.database.query' }).count<Array<{ count: string }>>('* as count');
    assert.equal(audits[0]?.count, '1');
    assert.deepEqual(await t.db('login_events').select('ip', 'user_agent'), [{ ip: '203.0.113.1', user_agent: 'seed' }]);
    for (const table of ['users', 'agent_jobs', 'login_events']) assert.equal(await t.db.schema.hasTable(table), true, table);
  });
});
