/**
 * The batching writer against a replaceable sink and a real spool directory: batches, the bounded
 * queue spilling to the spool, a failing or hung database, replay exactly once, shutdown flush,
 * drops counted only when the spool refuses rows, and a batch refused for one row's data split
 * until that row is isolated (written cleaned, or quarantined) while the database goes down or not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toApiLogRow, type ApiLogRow } from '../../gateway/request-log/row';
import { QUARANTINE_FILE, Spool } from '../../gateway/request-log/spool';
import { RequestLogWriter } from '../../gateway/request-log/writer';
import { captureLogs } from '../support/logs';
import { entry, FakeSink } from '../support/request-log-fakes';
import { waitFor } from '../support/wait';

const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => entry(from + i).requestId);

/** Requests arrive over time, not in one synchronous burst: yield to I/O every few pushes. */
async function pushPaced(w: RequestLogWriter, from: number, to: number, onPush: () => void = () => {}): Promise<void> {
  for (let i = from; i < to; i += 1) {
    w.push(entry(i));
    onPush();
    if (i % 5 === 4) await new Promise((r) => setTimeout(r, 1));
  }
}


describe('request log: batching writer', () => {
  let dir: string;
  let sink: FakeSink;
  let writer: RequestLogWriter | undefined;
  const logs = captureLogs('writer', 'info');

  function make(options: { maxQueue?: number; batchSize?: number; maxBytes?: number; spoolDir?: string; flushIntervalMs?: number } = {}): RequestLogWriter {
    writer = new RequestLogWriter({
      sink, spool: new Spool({ dir: options.spoolDir ?? dir, maxBytes: options.maxBytes ?? 10 * 1024 * 1024, segmentBytes: 2048 }), log: logs.log,
      batchSize: options.batchSize ?? 10, flushIntervalMs: options.flushIntervalMs ?? 20, maxQueue: options.maxQueue ?? 50, writeTimeoutMs: 50, retryMs: 20,
    });
    return writer;
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-spool-'));
    sink = new FakeSink();
  });
  afterEach(async () => {
    sink.release();
    await writer?.stop();
    writer = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes multi-row batches of at most batchSize on size and on the interval', async () => {
    const w = make({ batchSize: 4 });
    w.start();
    for (let i = 0; i < 10; i += 1) w.push(entry(i));
    await waitFor(() => sink.stored.size === 10, 'all rows');
    assert.ok(sink.batches.every((n) => n <= 4));
    assert.ok(sink.batches.some((n) => n > 1), 'rows are grouped');
    assert.deepEqual(sink.requestIds(), ids(0, 10));
    assert.equal(w.counters.spilled, 0);
    assert.equal(sink.jsonMismatches, 0, 'every batch arrives with its rows serialized once, as the rows');
  });

  it('keeps the queue bounded while the database fails, spills overflow to the spool, and replays it once', async () => {
    sink.mode = 'fail';
    const w = make({ maxQueue: 20, batchSize: 5 });
    w.start();
    let maxQueued = 0;
    await pushPaced(w, 0, 300, () => {
      maxQueued = Math.max(maxQueued, w.queued);
    });
    assert.ok(maxQueued <= 20 * 5, `memory stays bounded (${maxQueued})`);
    await waitFor(() => w.counters.spilled >= 280, 'overflow in the spool');
    assert.ok(w.counters.overflows > 0);
    assert.ok(readdirSync(dir).length > 0, 'segments on disk');
    assert.equal(sink.stored.size, 0);
    sink.mode = 'ok';
    await waitFor(() => sink.stored.size === 300, 'every row stored after the database is back');
    await waitFor(() => readdirSync(dir).length === 0, 'spool emptied');
    assert.deepEqual(sink.requestIds(), ids(0, 300));
    assert.equal(w.counters.dropped, 0);
    assert.equal(sink.jsonMismatches, 0, 'replayed batches are serialized as their rows too');
    assert.ok(logs.lines.some((l) => l.event === 'request_log_overflow'), 'overflow is logged');
  });

  it('does not start a second write while one hangs; rows of the hung batch are spooled and stored once', async () => {
    sink.mode = 'hang';
    const w = make({ maxQueue: 10, batchSize: 5 });
    w.start();
    for (let i = 0; i < 60; i += 1) {
      w.push(entry(i));
      // A loaded machine's disk can fall behind the spill (rows beyond it are dropped by design,
      // tested below); this test is about the hung write, so pushes wait for the spool to keep up.
      if (i % 5 === 4) await waitFor(() => w.queued <= 10, 'the spool keeping up');
    }
    await waitFor(() => w.counters.failedWrites >= 1 && w.counters.spilled >= 50, 'the timed-out batch and the overflow spooled');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(sink.batches.length, 1, 'one write in flight at most');
    sink.release();
    await waitFor(() => sink.stored.size === 60, 'all rows stored');
    await waitFor(() => readdirSync(dir).length === 0, 'spool emptied');
    assert.deepEqual(sink.requestIds(), ids(0, 60));
  });

  it('does not follow a write with a partly filled batch: rows arriving meanwhile wait for the interval', async () => {
    // Under light steady traffic a few rows always arrive while a write is in flight; writing them
    // the moment it ends would turn the log into one statement (and one aggregate update) per request.
    sink.mode = 'hang';
    const w = make({ batchSize: 4, flushIntervalMs: 60_000 });
    w.start();
    for (let i = 0; i < 4; i += 1) w.push(entry(i));
    await waitFor(() => sink.batches.length === 1, 'the full batch written');
    for (let i = 4; i < 7; i += 1) w.push(entry(i));
    sink.release();
    await waitFor(() => sink.stored.size === 4, 'the first batch stored');
    for (let i = 0; i < 10; i += 1) await new Promise((r) => setImmediate(r));
    assert.deepEqual(sink.batches, [4], 'no write of the 3 rows before the interval');
    assert.equal(w.queued, 3);
    w.push(entry(7));
    await waitFor(() => sink.stored.size === 8, 'the batch filled by the 4th row written');
    assert.deepEqual(sink.batches, [4, 4]);
    assert.deepEqual(sink.requestIds(), ids(0, 8));
  });

  it('flushes what is queued at shutdown', async () => {
    const w = make({ batchSize: 100 });
    for (let i = 0; i < 7; i += 1) w.push(entry(i));
    assert.equal(sink.stored.size, 0);
    await w.stop();
    writer = undefined;
    assert.deepEqual(sink.requestIds(), ids(0, 7));
  });

  it('spools at shutdown while the database is down, and a later writer replays the spool', async () => {
    sink.mode = 'fail';
    const first = make({ batchSize: 100 });
    for (let i = 0; i < 7; i += 1) first.push(entry(i));
    await first.stop();
    assert.equal(first.counters.spilled, 7);
    sink.mode = 'ok';
    const second = make();
    await (second as unknown as { options: { spool: Spool } }).options.spool.open();
    second.start();
    await waitFor(() => sink.stored.size === 7, 'spooled rows replayed by the next writer');
    assert.equal(second.counters.replayed, 7);
  });

  it('counts rows as dropped only when the spool refuses them', async () => {
    sink.mode = 'fail';
    const w = make({ maxQueue: 5, batchSize: 5, maxBytes: 3000 });
    w.start();
    for (let i = 0; i < 100; i += 1) w.push(entry(i));
    await w.stop();
    writer = undefined;
    assert.ok(w.counters.dropped > 0, 'the spool filled up');
    assert.equal(w.counters.spilled + w.counters.dropped, 100, 'every row is either spooled or counted');
    assert.ok(logs.lines.some((l) => l.event === 'request_log_spool_full'));
  });

  it('splits a batch refused for one row until the row is alone, and writes all the others', async () => {
    sink.refuses = (row) => row.request_id === entry(37).requestId;
    const w = make({ batchSize: 64, maxQueue: 100 });
    w.start();
    for (let i = 0; i < 64; i += 1) w.push(entry(i));
    await waitFor(() => sink.stored.size === 63 && w.counters.quarantined === 1, 'the other rows stored, the row quarantined');
    assert.deepEqual(sink.requestIds(), ids(0, 64).filter((id) => id !== entry(37).requestId));
    assert.equal(w.counters.written, 63);
    // 64 → 32 → 16 → 8 → 4 → 2 → 1: a refusal per level, each good half written at once; cleaning
    // changes nothing in this row, so it is not written again.
    assert.equal(w.counters.refusedWrites, 7);
    assert.equal(sink.batches.length, 13);
    assert.equal(w.counters.failedWrites, 0, 'a refusal is not the database being down');
    assert.equal(w.counters.spilled, 0);
  });

  it('quarantines a row refused even cleaned: kept on disk with the reason, counted, warned once, never retried', async () => {
    sink.refuses = (row) => row.latency_ms > 2 ** 31;
    const w = make({ batchSize: 50 });
    w.start();
    for (let i = 0; i < 50; i += 1) w.push(i === 3 || i === 40 ? Object.assign(entry(i), { latencyMs: 3e9 }) : entry(i));
    await waitFor(() => w.counters.quarantined === 2, 'two rows quarantined');
    await waitFor(() => sink.stored.size === 48, 'the other rows stored');
    const lines = readFileSync(join(dir, QUARANTINE_FILE), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { sqlstate: string; error: string; row: ApiLogRow });
    assert.deepEqual(lines.map((l) => l.row.request_id).sort(), [entry(3).requestId, entry(40).requestId]);
    assert.ok(lines.every((l) => l.sqlstate === '22P05' && l.error.length > 0 && l.row.latency_ms === 3e9));
    const warned = logs.lines.filter((l) => l.event === 'request_log_quarantined' && [entry(3).requestId, entry(40).requestId].includes(l.request_id as string));
    assert.equal(warned.length, 2, 'one warning per quarantined row');
    assert.ok(warned.every((l) => l.level === 'warn' && l.sqlstate === '22P05'), 'at warn, with the reason');
    const statements = sink.batches.length;
    for (let i = 50; i < 60; i += 1) w.push(entry(i));
    await waitFor(() => sink.stored.size === 58, 'later rows stored');
    assert.equal(sink.batches.length, statements + 1, 'the quarantined rows are not tried again');
    assert.equal(w.counters.failedWrites, 0);
  });

  it('spools the rows not yet stored when the database goes down while a refused batch is split', async () => {
    sink.refuses = (row) => row.request_id === entry(5).requestId;
    sink.failAfter = 3; // the batch, its first half, its first quarter; then the database is gone
    const w = make({ batchSize: 16, maxQueue: 100 });
    w.start();
    for (let i = 0; i < 16; i += 1) w.push(entry(i));
    await waitFor(() => w.counters.failedWrites >= 1 && w.counters.spilled > 0, 'the rest spooled');
    const spilled = w.counters.spilled;
    assert.ok(spilled < 16 && spilled > 0, `only rows not yet stored went to the spool (${spilled})`);
    sink.refuses = () => false;
    sink.failAfter = Infinity;
    sink.mode = 'ok';
    await waitFor(() => sink.stored.size === 16, 'every row stored once the database is back');
    assert.deepEqual(sink.requestIds(), ids(0, 16));
  });

  it('moves past a spool segment holding a refused row: good rows stored, the row quarantined, later segments replayed', async () => {
    const good = (n: number) => JSON.stringify(toApiLogRow(entry(n)));
    const refused = JSON.stringify({ ...toApiLogRow(entry(500)), latency_ms: 3e9 });
    // A line written before the text rule (or by hand): a raw NUL, which cleaning repairs.
    const nul = JSON.stringify({ ...toApiLogRow(entry(6)), model: 'x\u0000y' });
    // Two segments of a process that is gone: the first holds both among good rows.
    writeFileSync(join(dir, '999999-1-1.jsonl'), `${[good(0), good(1), refused, good(2), nul, good(3)].join('\n')}\n`);
    writeFileSync(join(dir, '999999-1-2.jsonl'), `${[good(4), good(5)].join('\n')}\n`);
    sink.refuses = (row) => row.latency_ms > 2 ** 31 || row.model?.includes('\u0000') === true;
    const w = make({ batchSize: 10 });
    await (w as unknown as { options: { spool: Spool } }).options.spool.open();
    w.start();
    await waitFor(() => sink.stored.size === 7 && readdirSync(dir).every((f) => !f.endsWith('.jsonl') || f === QUARANTINE_FILE), 'both segments replayed and deleted');
    assert.deepEqual(sink.requestIds(), ids(0, 7));
    assert.equal([...sink.stored.values()].find((r) => r.request_id === entry(6).requestId)?.model, 'x\ufffdy', 'the NUL row is stored cleaned');
    assert.equal(w.counters.cleaned, 1);
    assert.equal(w.counters.quarantined, 1);
    assert.equal(w.counters.replayed, 7);
    assert.match(readFileSync(join(dir, QUARANTINE_FILE), 'utf8'), new RegExp(entry(500).requestId));
  });
});
