/**
 * The request-log migration against real PostgreSQL: its down refuses while
 * `provider_hourly_stats` or the new `api_logs` columns hold data, changing nothing, and goes
 * down and up again cleanly otherwise.
 */
import assert from 'node:assert/strict';
import * as requestLog from '../../migrations/20261121020000_request_log';
import { freshDatabase, type TestDatabase } from '../support/db';

async function columns(t: TestDatabase): Promise<string[]> {
  const result = await t.db.raw<{ rows: Array<{ column_name: string }> }>(
    `select column_name from information_schema.columns where table_name = 'api_logs' and column_name like 'user_message_%' and column_name <> 'user_message_text' order by 1`,
    // user_message_text belongs to a later migration (20261207120000_public_stats).
  );
  return result.rows.map((r) => r.column_name);
}

const row = (extra: Record<string, unknown> = {}) => ({ request_id: 'r', surface: 'chat', status: 200, ...extra });

describe('migration 20261121020000_request_log', () => {
  let t: TestDatabase;
  afterEach(async () => {
    await t?.drop();
  });

  it('refuses to revert while provider_hourly_stats holds rows', async () => {
    t = await freshDatabase();
    await t.db('provider_hourly_stats').insert({ hour: new Date(), provider: 'p', model: 'm', endpoint_id: 'e', requests: 1 });
    await assert.rejects(requestLog.down(t.db), /provider_hourly_stats holds rows/);
    assert.equal((await t.db('provider_hourly_stats').select()).length, 1);
  });

  it('refuses to revert while api_logs rows hold user-message columns', async () => {
    t = await freshDatabase();
    await t.db('api_logs').insert(row({ user_message_hash: '0123456789abcdef', user_message_chars: 3 }));
    await assert.rejects(requestLog.down(t.db), /user-message or synthetic columns/);
    assert.deepEqual(await columns(t), ['user_message_chars', 'user_message_entropy', 'user_message_hash']);
  });

  it('reverts and re-applies when no data would be lost', async () => {
    t = await freshDatabase();
    await t.db('api_logs').insert(row());
    await requestLog.down(t.db);
    assert.deepEqual(await columns(t), []);
    assert.equal(await t.db.schema.hasTable('provider_hourly_stats'), false);
    await requestLog.up(t.db);
    assert.deepEqual(await columns(t), ['user_message_chars', 'user_message_entropy', 'user_message_hash']);
    await t.db('api_logs').insert(row({ log_id: '00000000-0000-4000-8000-000000000001' }));
    await assert.rejects(t.db('api_logs').insert(row({ log_id: '00000000-0000-4000-8000-000000000001' })), /api_logs_log_id_unique/);
  });
});
