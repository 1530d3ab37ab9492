/**
 * Which database errors are an outage (503) and which are a fault (500): real errors from a pool
 * pointed at a closed loopback port and from a private PostgreSQL killed under an open connection,
 * against errors of statements a live server refused.
 */
import assert from 'node:assert/strict';
import { createDb, isDatabaseUnavailable, type Db } from '../../lib/db';
import { toAppError } from '../../lib/http/error-middleware';
import { freshDatabase, type TestDatabase } from '../support/db';
import { unusedLoopbackPort } from '../support/ports';
import { captureLogs } from '../support/logs';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';

async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  return assert.fail('the statement succeeded');
}

describe('database outage errors', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let pg: PrivatePostgres | undefined;
  const pools: Db[] = [];

  before(async () => {
    t = await freshDatabase();
  });
  after(async () => {
    for (const pool of pools) await pool.destroy();
    pg?.stop();
    await t?.drop();
  });

  function pool(url: string): Db {
    const db = createDb({ url, poolMax: 1, acquireTimeoutMs: 2000, log: captureLogs('outage-pool', 'warn').log });
    pools.push(db);
    return db;
  }

  it('calls a refused connection an outage and renders it as 503 with a clear message', async () => {
    const closed = pool(`postgres://x@127.0.0.1:${await unusedLoopbackPort()}/x`);
    const err = await failure(() => closed.raw('select 1'));
    assert.equal(isDatabaseUnavailable(err), true, String(err));
    const app = toAppError(err);
    assert.equal(app.status, 503);
    assert.equal(app.code, 'service_unavailable');
    assert.equal(app.expose, true);
    assert.match(app.message, /^The database is not answering right now/);
  });

  it('calls a connection killed under it, an outage, and the pool works once the server is back', async () => {
    pg = await startPrivatePostgres();
    const db = pool(pg.url);
    await db.raw('select 1');
    pg.kill9();
    const broken = await failure(() => db.raw('select 1'));
    assert.equal(isDatabaseUnavailable(broken), true, String(broken));
    assert.equal(toAppError(broken).status, 503);
    pg.restart();
    assert.deepEqual((await db.raw<{ rows: unknown[] }>('select 1 as one')).rows, [{ one: 1 }], 'the pool works again');
  });

  it('keeps statement errors of a live server as 500 (a fault, not an outage)', async () => {
    for (const sql of ['select * from no_such_table', 'select 1/0', "select 'x'::int"]) {
      const err = await failure(() => t.db.raw(sql));
      assert.equal(isDatabaseUnavailable(err), false, sql);
      assert.equal(toAppError(err).status, 500, sql);
    }
    assert.equal(isDatabaseUnavailable(new Error('boom')), false);
  });
});
