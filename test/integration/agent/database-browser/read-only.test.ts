/**
 * The database browser's transaction (agent/database-browser/read-only.ts) on real PostgreSQL:
 * even a statement that reached it cannot write, its statement timeout cancels a long statement,
 * and the timeout is local: the pooled connection goes back with its own setting.
 */
import assert from 'node:assert/strict';
import { inReadOnlyTransaction } from '../../../../agent/database-browser/read-only';
import { freshDatabase, type TestDatabase } from '../../../support/db';

async function sqlState(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe('database browser: read-only transaction (PostgreSQL)', () => {
  let t: TestDatabase;

  before(async () => {
    // One connection: what the helper set would still be on it afterwards.
    t = await freshDatabase({ poolMax: 1 });
    await t.db('login_events').insert({ outcome: 'ok', user_agent: 'before' });
  });
  after(async () => {
    await t?.drop();
  });

  const readOnly = <T>(work: Parameters<typeof inReadOnlyTransaction<T>>[2], statementTimeoutMs = 5000) => inReadOnlyTransaction(t.db, { statementTimeoutMs }, work);

  it('refuses every kind of write with SQLSTATE 25006 (read_only_sql_transaction) and changes nothing', async () => {
    const writes = [
      "insert into login_events (outcome, user_agent) values ('ok', 'written')",
      "update login_events set user_agent = 'changed'",
      'delete from login_events',
      'truncate login_events',
      'create table browser_wrote (id int)',
      'drop table login_events',
      "select nextval('login_events_id_seq')",
    ];
    for (const sql of writes) {
      assert.equal(await sqlState(readOnly((trx) => trx.raw(sql))), '25006', sql);
    }
    assert.equal(await sqlState(readOnly(async (trx) => {
      await trx.raw('select 1');
      await trx.raw('set transaction read write');
    })), '25001', 'read write cannot be switched on after the first statement');
    const rows = await t.db('login_events').select('user_agent');
    assert.deepEqual(rows, [{ user_agent: 'before' }]);
    assert.equal(await t.db.schema.hasTable('browser_wrote'), false);
  });

  it('reads inside a READ ONLY transaction under the given statement timeout', async () => {
    const seen = await readOnly(async (trx) => {
      const { rows } = await trx.raw<{ rows: Array<{ ro: string; timeout: string; ua: string }> }>(
        "select current_setting('transaction_read_only') as ro, current_setting('statement_timeout') as timeout, (select user_agent from login_events limit 1) as ua",
      );
      return rows[0];
    }, 1234);
    assert.deepEqual(seen, { ro: 'on', timeout: '1234ms', ua: 'before' });
  });

  it('cancels a statement at the timeout (SQLSTATE 57014), and the connection keeps its own timeout afterwards', async () => {
    const before = (await t.db.raw<{ rows: Array<{ statement_timeout: string }> }>('show statement_timeout')).rows[0]?.statement_timeout;
    assert.equal(await sqlState(readOnly((trx) => trx.raw('select pg_sleep(5)'), 100)), '57014');
    const after = (await t.db.raw<{ rows: Array<{ statement_timeout: string }> }>('show statement_timeout')).rows[0]?.statement_timeout;
    assert.equal(after, before);
    assert.notEqual(after, '100ms');
    const ro = (await t.db.raw<{ rows: Array<{ ro: string }> }>("select current_setting('transaction_read_only') as ro")).rows[0]?.ro;
    assert.equal(ro, 'off', 'the pool connection is back to read-write for everyone else');
  });

  it('refuses a timeout that is not a positive integer before touching the database', async () => {
    for (const ms of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(inReadOnlyTransaction(t.db, { statementTimeoutMs: ms }, () => Promise.resolve(1)), /positive integer/);
    }
  });
});
