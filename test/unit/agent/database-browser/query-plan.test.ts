/**
 * The database browser's plan (agent/database-browser/query-plan.ts), without a database: names
 * resolve against the visible schema only, values never enter the SQL text, each operator maps to
 * its SQL, the primary key breaks ties, and the operators each kind accepts.
 */
import assert from 'node:assert/strict';
import { AppError } from '../../../../lib/errors';
import { browserQuerySchema, planQuery, visibleSchemaView, type QueryPlan } from '../../../../agent/database-browser/query-plan';
import { shapePage } from '../../../../agent/database-browser/run-query';

function plan(body: Record<string, unknown>): QueryPlan {
  return planQuery(browserQuerySchema.parse(body));
}

function refusal(body: Record<string, unknown>): AppError {
  try {
    plan(body);
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    return err;
  }
  assert.fail(`planned ${JSON.stringify(body)}`);
}

describe('database browser: query plan', () => {
  it('writes only visible names, double-quoted, and binds every value', () => {
    const nasty = "'; drop table users; -- %_\\ ? $1";
    const p = plan({
      table: 'login_events', columns: ['id', 'user_agent'],
      filters: [{ column: 'user_agent', op: 'contains', value: nasty }, { column: 'ip', op: 'eq', value: nasty }, { column: 'id', op: 'gte', value: '7' }],
      sort: { column: 'created_at', direction: 'desc' }, limit: 10, offset: 20,
    });
    assert.equal(
      p.sql,
      'select "id" as "c0", left("user_agent", ?) as "c1", length("user_agent") as "l1" from "public"."login_events"' +
        ' where strpos(lower("user_agent"), lower(cast(? as text))) > 0 and "ip" = ? and "id" >= ?' +
        ' order by "created_at" desc, "id" desc limit ? offset ?',
    );
    assert.deepEqual(p.bindings, [4000, nasty, nasty, '7', 11, 20]);
    assert.ok(!p.sql.includes('drop'));
  });

  it('maps ne to IS DISTINCT FROM, null tests take no binding, JSON and arrays are searched as JSON text', () => {
    const p = plan({
      table: 'users', columns: ['id'],
      filters: [{ column: 'role', op: 'ne', value: 'admin' }, { column: 'deleted_at', op: 'is_null' }, { column: 'suspended_at', op: 'not_null' }, { column: 'permissions', op: 'contains', value: 'agent.admin' }],
    });
    assert.match(p.sql, / where "role" is distinct from \? and "deleted_at" is null and "suspended_at" is not null and strpos\(lower\(to_jsonb\("permissions"\)::text\), lower\(cast\(\? as text\)\)\) > 0 order by "id" asc limit \? offset \?$/);
    assert.deepEqual(p.bindings, ['admin', 'agent.admin', 51, 0]);
    const json = plan({ table: 'agent_audit_log', columns: ['details'], filters: [{ column: 'details', op: 'contains', value: 'x' }] });
    assert.match(json.sql, /left\("details"::text, \?\) as "c0", length\("details"::text\) as "l0" .* where strpos\(lower\("details"::text\)/);
  });

  it('orders by the whole primary key by default and after a sort column', () => {
    assert.match(plan({ table: 'provider_hourly_stats' }).sql, /order by "hour" asc, "provider" asc, "model" asc, "endpoint_id" asc limit/);
    assert.match(plan({ table: 'provider_hourly_stats', sort: { column: 'model', direction: 'desc' } }).sql, /order by "model" desc, "hour" desc, "provider" desc, "endpoint_id" desc limit/);
    assert.match(plan({ table: 'agent_sandbox_usage_daily', columns: ['day'] }).sql, /select "day"::text as "c0"/);
  });

  it('refuses names outside the visible schema and operators a kind does not take, naming the field', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ table: 'email_outbox' }, 'table'],
      [{ table: 'constructor' }, 'table'],
      [{ table: '__proto__' }, 'table'],
      [{ table: 'users', columns: ['id', 'password_hash'] }, 'columns.1'],
      [{ table: 'users', columns: ['id', 'id'] }, 'columns.1'],
      [{ table: 'users', columns: ['hasOwnProperty'] }, 'columns.0'],
      [{ table: 'users', filters: [{ column: 'email', op: 'eq', value: 'a' }] }, 'filters.0.column'],
      [{ table: 'users', filters: [{ column: 'id', op: 'contains', value: '1' }] }, 'filters.0.op'],
      [{ table: 'users', filters: [{ column: 'id', op: 'like', value: '1' }] }, 'filters.0.op'],
      [{ table: 'users', filters: [{ column: 'permissions', op: 'eq', value: 'x' }] }, 'filters.0.op'],
      [{ table: 'users', filters: [{ column: 'id', op: 'eq', value: '1 or 1=1' }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'id', op: 'eq', value: 1.5 }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'created_at', op: 'gt', value: 'now()' }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'created_at', op: 'gt', value: '2026-13-45' }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'deleted_at', op: 'is_null', value: 'x' }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'role', op: 'eq' }] }, 'filters.0.value'],
      [{ table: 'users', filters: [{ column: 'role', op: 'contains', value: '' }] }, 'filters.0.value'],
      [{ table: 'api_logs', filters: [{ column: 'stream', op: 'eq', value: 'true' }] }, 'filters.0.value'],
      [{ table: 'api_logs', filters: [{ column: 'log_id', op: 'eq', value: 'not-a-uuid' }] }, 'filters.0.value'],
      [{ table: 'users', sort: { column: 'password_hash' } }, 'sort.column'],
    ];
    for (const [body, field] of cases) {
      const err = refusal(body);
      assert.equal(err.status, 400, JSON.stringify(body));
      assert.equal(err.param, field, `${JSON.stringify(body)}: ${err.message}`);
    }
  });

  it('accepts the values each kind takes', () => {
    const p = plan({
      table: 'api_logs', columns: ['id'],
      filters: [
        { column: 'id', op: 'gt', value: 5 }, { column: 'api_key_id', op: 'eq', value: '123456789012345678' }, { column: 'cost_usd', op: 'lt', value: '0.25' },
        { column: 'stream', op: 'eq', value: false }, { column: 'log_id', op: 'eq', value: '0b5d6c1e-8f1a-4c3e-9d2b-0123456789ab' },
        { column: 'created_at', op: 'gte', value: '2026-11-25T10:00:00.5+01:00' }, { column: 'created_at', op: 'lt', value: '2026-11-26' },
      ],
    });
    assert.deepEqual(p.bindings.slice(0, -2), [5, '123456789012345678', '0.25', false, '0b5d6c1e-8f1a-4c3e-9d2b-0123456789ab', '2026-11-25T10:00:00.5+01:00', '2026-11-26']);
  });

  it('shapes a page: JSON cells parsed, long cells cut and listed, one row beyond the limit means more', () => {
    const p = plan({ table: 'agent_audit_log', columns: ['id', 'reason', 'details'], limit: 2 });
    const long = 'x'.repeat(4000);
    const page = shapePage(p, [
      { c0: '1', c1: 'short', l1: 5, c2: '{"a": [1, 2]}', l2: 13 },
      { c0: '2', c1: long, l1: 9000, c2: null, l2: null },
      { c0: '3', c1: null, l1: null, c2: '{}', l2: 2 },
    ]);
    assert.deepEqual(page.rows, [{ id: '1', reason: 'short', details: { a: [1, 2] } }, { id: '2', reason: long, details: null }]);
    assert.deepEqual(page.truncated, [{ row: 1, column: 'reason', length: 9000 }]);
    assert.deepEqual([page.has_more, page.next_offset], [true, 2]);
  });

  it('describes the visible schema without any secret-looking column', () => {
    const view = visibleSchemaView(5000) as { tables: Array<{ name: string; columns: Array<{ name: string }> }> };
    const names = view.tables.flatMap((t) => t.columns.map((c) => `${t.name}.${c.name}`));
    const secretLooking = names.filter((n) => /hash|password|secret|sealed|\.api_key$|fingerprint|prefix|credential|\.email$|\.token$|\.env$|\.prompt$|\.result$|payload|\.config$/.test(n));
    assert.deepEqual(secretLooking, []);
  });
});
