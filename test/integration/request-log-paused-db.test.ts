/**
 * Requests keep being served while PostgreSQL is frozen, and their rows arrive afterwards.
 * Uses a private cluster (never the shared dev server): its postmaster and every backend get
 * SIGSTOP, 200 requests go through a gateway to a fake upstream, then SIGCONT. Every request
 * must succeed, and every row must be stored exactly once (including those that went through
 * the spool), with `provider_hourly_stats` counting each request once. No timing is asserted.
 */
import assert from 'node:assert/strict';
import { createDb, type Db } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from '../support/gateway';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';

const REQUESTS = 200;

describe('request log while PostgreSQL is paused', function () {
  this.timeout(180_000);
  let pg: PrivatePostgres | undefined;
  let db: Db | undefined;
  let upstream: FakeUpstream | undefined;
  let gw: TestGateway | undefined;

  before(async () => {
    pg = await startPrivatePostgres();
    db = createDb({ url: pg.url, poolMax: 4, applicationName: 'paused-db-test' });
    await migrateLatest(db);
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db,
      modelsYaml: `models:\n${chatModelYaml('m', [`{ kind: generic_compat, base_url: "${upstream.url}", provider: local }`])}`,
      // A small queue and a short write timeout, so the pause exercises the overflow spool.
      env: { REQUEST_LOG_FLUSH_INTERVAL_MS: '50', REQUEST_LOG_BATCH_SIZE: '20', REQUEST_LOG_MAX_QUEUE: '40', REQUEST_LOG_WRITE_TIMEOUT_MS: '300' },
    });
  });

  after(async () => {
    try {
      pg?.resume();
      await closeAll(gw, upstream);
      await db?.destroy();
    } finally {
      pg?.stop();
    }
  });

  const chat = (id: string) => fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${id}` }] }),
  });

  async function count(sql: string): Promise<number> {
    return Number((await db!.raw<{ rows: Array<{ n: string }> }>(sql)).rows[0]?.n);
  }

  it('serves every request while the database is stopped and stores every row once it is back', async () => {
    const warm = await chat('warm-up');
    assert.equal(warm.status, 200);
    for (let i = 0; i < 200 && (await count(`select count(*) as n from api_logs`)) < 1; i += 1) await new Promise((r) => setTimeout(r, 25));
    assert.equal(await count(`select count(*) as n from api_logs`), 1, 'the log works before the pause');

    const writer = gw!.deps.requestLog!.writer;
    const stopped = pg!.pause();
    assert.ok(stopped.length > 1, 'the postmaster and its backends are stopped');
    let statuses: number[] = [];
    try {
      for (let start = 0; start < REQUESTS; start += 20) {
        const wave = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(`paused-${start + i}`).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        })));
        statuses = statuses.concat(wave);
      }
      // Wait (bounded) until the writer has given up on the frozen server at least once.
      for (let i = 0; i < 400 && writer.counters.failedWrites === 0; i += 1) await new Promise((r) => setTimeout(r, 25));
    } finally {
      pg!.resume();
    }
    assert.equal(statuses.length, REQUESTS);
    assert.ok(statuses.every((s) => s === 200), `every request succeeded (${statuses.filter((s) => s !== 200).length} did not)`);
    assert.ok(writer.counters.failedWrites > 0, 'a write timed out while the server was stopped');
    assert.ok(writer.counters.spilled > 0, 'rows went to the spool');

    const expected = REQUESTS + 1;
    for (let i = 0; i < 1200 && (await count(`select count(*) as n from api_logs`)) < expected; i += 1) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await count(`select count(*) as n from api_logs`), expected, 'every row arrived, none twice');
    assert.equal(await count(`select count(distinct request_id) as n from api_logs`), expected);
    assert.equal(await count(`select coalesce(sum(requests), 0) as n from provider_hourly_stats`), expected, 'each request counted once in the aggregates');
    assert.equal(writer.counters.dropped, 0);
  });
});
