/**
 * Rows PostgreSQL refuses for their data never hold back the rows around them (issue 25, item 3),
 * against a real PostgreSQL: a live batch with a row outside a column's range among two thousand
 * good ones, and spool segments left by a dead process holding rows the text rule never saw (a raw
 * NUL, a lone surrogate escape) and an out-of-range row, followed by another segment. Every good
 * row lands once (and is counted once in `provider_hourly_stats`), the text rows land cleaned,
 * the out-of-range rows are quarantined beside the spool, and replay moves on to the next segment.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestRecord } from '../../gateway/surfaces/request-record';
import { requestRecord, type RecordFields } from '../support/request-log-fakes';
import { toApiLogRow, type ApiLogRow } from '../../gateway/request-log/row';
import { QUARANTINE_FILE } from '../../gateway/request-log/spool';
import { REPLACEMENT } from '../../lib/text';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

function entry(requestId: string, overrides: RecordFields = {}): RequestRecord {
  return requestRecord({
    at: Date.now(), requestId, path: '/v1/chat/completions', surface: undefined, status: 200, latencyMs: 4, firstTokenMs: undefined,
    errorCode: undefined, caller: { role: 'pro', via: 'api_key', userId: 1, apiKeyId: 2 }, model: 'm', stream: false,
    routing: { provider: 'p-refused', base_url: 'http://u/v1', endpoint_id: 'ep-refused' }, usage: { prompt_tokens: 3, completion_tokens: 1 },
    pricing: undefined, client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage: 'hi', userAgent: 'curl/8', sessionId: undefined,
    synthetic: false, rejection: undefined, ...overrides,
  });
}

/** A pid no process has: a child that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid;
}

interface Quarantined {
  sqlstate: string;
  error: string;
  row: ApiLogRow;
}

describe('request log: rows PostgreSQL refuses', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let gw: TestGateway | undefined;

  freshDatabaseForBlock((db) => {
    t = db;
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  const count = async (sql: string, bindings: string[] = []): Promise<number> => Number((await t.db.raw<{ rows: Array<{ n: string }> }>(sql, bindings)).rows[0]!.n);
  const quarantined = (dir: string): Quarantined[] => readFileSync(join(dir, QUARANTINE_FILE), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Quarantined);

  it('writes every good row of a live batch holding a row out of range, and quarantines that row', async () => {
    const spool = mkdtempSync(join(tmpdir(), 'rl-refused-live-'));
    gw = await startTestGateway({ db: t.db, env: { REQUEST_LOG_SPOOL_DIR: spool, REQUEST_LOG_FLUSH_INTERVAL_MS: '50' } });
    const writer = gw.deps.requestLog!.writer;
    const good = Array.from({ length: 2000 }, (_, i) => `live-${i}`);
    good.forEach((id, i) => {
      writer.push(entry(id));
      // 3e9 ms does not fit `latency_ms integer`: PostgreSQL refuses the statement (22003).
      if (i === 1234) writer.push(entry('live-out-of-range', { latencyMs: 3e9 }));
    });
    await waitFor(() => writer.counters.quarantined === 1 && writer.counters.written === good.length, 'the good rows written, the bad one quarantined', 30_000);
    assert.equal(await count(`select count(*) as n from api_logs where request_id like 'live-%'`), good.length);
    assert.equal(await count(`select count(distinct request_id) as n from api_logs where request_id like 'live-%'`), good.length);
    assert.equal(await count(`select count(*) as n from api_logs where request_id = 'live-out-of-range'`), 0);
    assert.equal(await count(`select coalesce(sum(requests), 0) as n from provider_hourly_stats where provider = 'p-refused'`), good.length, 'aggregates count the stored rows once');
    const [row] = quarantined(spool);
    assert.deepEqual([row!.sqlstate, row!.row.request_id, row!.row.latency_ms], ['22003', 'live-out-of-range', 3e9]);
    assert.match(row!.error, /out of range for type integer/);
    assert.ok(!row!.error.includes('insert into'), 'the reason is the server message, not the statement');
    assert.equal(writer.counters.failedWrites, 0, 'the database was never taken for down');
    assert.equal(writer.counters.spilled, 0);
    assert.ok(gw.logs.lines.some((l) => l.event === 'request_log_quarantined' && l.request_id === 'live-out-of-range' && l.sqlstate === '22003'));
  });

  it('replays past a spool segment PostgreSQL refuses: text rows stored cleaned, the out-of-range row quarantined, the next segment stored', async () => {
    const spool = mkdtempSync(join(tmpdir(), 'rl-refused-spool-'));
    mkdirSync(spool, { recursive: true });
    const pid = deadPid();
    const line = (row: ApiLogRow): string => JSON.stringify(row);
    const goodRow = (id: string): string => line(toApiLogRow(entry(id)));
    const first = Array.from({ length: 300 }, (_, i) => goodRow(`seg1-${i}`));
    // Lines as an older gateway or a hand-written segment could hold them: no text rule applied.
    first.splice(50, 0, line({ ...toApiLogRow(entry('seg1-nul')), model: 'nul\u0000model' }));
    first.splice(150, 0, line({ ...toApiLogRow(entry('seg1-surrogate')), metadata: { user_agent: 'ua \ud800' } }));
    first.splice(250, 0, line({ ...toApiLogRow(entry('seg1-out-of-range')), status: 5e9 }));
    const second = Array.from({ length: 200 }, (_, i) => goodRow(`seg2-${i}`));
    writeFileSync(join(spool, `${pid}-1-1.jsonl`), `${first.join('\n')}\n`);
    writeFileSync(join(spool, `${pid}-1-2.jsonl`), `${second.join('\n')}\n`);

    gw = await startTestGateway({ db: t.db, env: { REQUEST_LOG_SPOOL_DIR: spool, REQUEST_LOG_FLUSH_INTERVAL_MS: '50', REQUEST_LOG_BATCH_SIZE: '100' } });
    const writer = gw.deps.requestLog!.writer;
    await waitFor(() => readdirSync(spool).filter((f) => f !== QUARANTINE_FILE).length === 0, 'both segments replayed and deleted', 30_000);
    assert.equal(await count(`select count(*) as n from api_logs where request_id like 'seg1-%' and request_id not in ('seg1-nul', 'seg1-surrogate')`), 300);
    assert.equal(await count(`select count(*) as n from api_logs where request_id like 'seg2-%'`), 200, 'the segment after the refused one is stored');
    const model = await t.db('api_logs').where({ request_id: 'seg1-nul' }).first<{ model: string }>('model');
    assert.equal(model?.model, `nul${REPLACEMENT}model`);
    const meta = await t.db('api_logs').where({ request_id: 'seg1-surrogate' }).first<{ metadata: { user_agent: string } }>('metadata');
    assert.equal(meta?.metadata.user_agent, `ua ${REPLACEMENT}`);
    assert.equal(await count(`select count(*) as n from api_logs where request_id = 'seg1-out-of-range'`), 0);
    assert.deepEqual(quarantined(spool).map((q) => [q.row.request_id, q.sqlstate]), [['seg1-out-of-range', '22003']]);
    assert.deepEqual([writer.counters.replayed, writer.counters.cleaned, writer.counters.quarantined, writer.counters.failedWrites], [502, 2, 1, 0]);
    assert.equal(await count(`select count(*) as n from api_logs where request_id like 'seg%'`), await count(`select count(distinct request_id) as n from api_logs where request_id like 'seg%'`), 'no row twice');
    assert.ok(existsSync(join(spool, QUARANTINE_FILE)));
  });
});
