/**
 * The request log's journal (gateway/request-log/journal.ts) with the batching writer, a
 * replaceable sink and a real directory: rows reach the journal file at the end of the event-loop
 * turn that pushed them, before any database write, with the `log_id` they are stored under; the file
 * is emptied once its rows are stored or spooled and removed at shutdown; rotated files are
 * deleted once settled; and a journal left by a dead process is adopted and replayed without
 * storing a row twice.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal, JOURNAL_FILE } from '../../gateway/request-log/journal';
import type { ApiLogRow } from '../../gateway/request-log/row';
import { Spool } from '../../gateway/request-log/spool';
import { RequestLogWriter } from '../../gateway/request-log/writer';
import { captureLogs } from '../support/logs';
import { entry as makeEntry, FakeSink } from '../support/request-log-fakes';
import { waitFor } from '../support/wait';

const entry = (n: number) => makeEntry(n, 'j');

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));


describe('request log: journal', () => {
  let dir: string;
  let sink: FakeSink;
  let writer: RequestLogWriter | undefined;
  const logs = captureLogs('journal', 'info');

  function make(options: { batchSize?: number; segmentBytes?: number; flushIntervalMs?: number } = {}): { writer: RequestLogWriter; spool: Spool } {
    const spool = new Spool({ dir, maxBytes: 10 * 1024 * 1024 });
    const journal = new Journal({ dir, stamp: spool.stamp, ...(options.segmentBytes ? { segmentBytes: options.segmentBytes } : {}) });
    writer = new RequestLogWriter({
      sink, spool, journal, log: logs.log, batchSize: options.batchSize ?? 10, flushIntervalMs: options.flushIntervalMs ?? 20, maxQueue: 1000, writeTimeoutMs: 50, retryMs: 20,
    });
    return { writer, spool };
  }

  const journalFiles = (): string[] => readdirSync(dir).filter((f) => JOURNAL_FILE.test(f));
  const journalLines = (): ApiLogRow[] => journalFiles().flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ApiLogRow));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-journal-'));
    sink = new FakeSink();
  });
  afterEach(async () => {
    sink.release();
    await writer?.stop();
    writer = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('journals the rows of an event-loop turn at its end, before any database write, under the log_id they are stored with', async () => {
    sink.mode = 'hang';
    const { writer: w } = make({ batchSize: 5 });
    w.start();
    for (let i = 0; i < 7; i += 1) w.push(entry(i));
    assert.equal(journalFiles().length, 0, 'nothing is written on the request path itself');
    await turn();
    const journaled = journalLines();
    assert.deepEqual(journaled.map((r) => r.request_id), Array.from({ length: 7 }, (_, i) => entry(i).requestId), 'on disk once the turn ended');
    assert.equal(journalFiles().length, 1, 'one file');
    assert.equal(sink.stored.size, 0, 'nothing stored yet');
    sink.release();
    w.push(entry(7));
    w.push(entry(8));
    w.push(entry(9));
    await waitFor(() => sink.stored.size === 10, 'all rows stored');
    const stored = new Map([...sink.stored.values()].map((r) => [r.request_id, r.log_id]));
    for (const row of journaled) assert.equal(stored.get(row.request_id), row.log_id, `${row.request_id} is stored under its journaled log_id`);
  });

  it('empties the journal once its rows are stored, and removes it at shutdown', async () => {
    const { writer: w } = make({ batchSize: 4 });
    w.start();
    for (let i = 0; i < 8; i += 1) w.push(entry(i));
    await waitFor(() => sink.stored.size === 8, 'rows stored');
    await waitFor(() => journalFiles().every((f) => statSync(join(dir, f)).size === 0), 'the journal emptied');
    await w.stop();
    writer = undefined;
    assert.deepEqual(journalFiles(), [], 'no journal left after a clean stop');
  });

  it('lets rows go from the journal once they are in the spool while the database is down', async () => {
    sink.mode = 'fail';
    const { writer: w, spool } = make({ batchSize: 4 });
    w.start();
    for (let i = 0; i < 8; i += 1) w.push(entry(i));
    await waitFor(() => w.counters.spilled === 8, 'rows spooled');
    assert.ok(journalFiles().every((f) => statSync(join(dir, f)).size === 0), 'the journal holds nothing the spool holds');
    assert.ok(spool.pending);
  });

  it('deletes rotated journal files once their rows are settled', async () => {
    sink.mode = 'hang';
    const { writer: w } = make({ batchSize: 50, segmentBytes: 1024 });
    w.start();
    for (let i = 0; i < 40; i += 1) {
      w.push(entry(i));
      await turn(); // one event-loop turn per request: one journal write each
    }
    assert.ok(journalFiles().length > 3, `several files (${journalFiles().length})`);
    assert.equal(journalLines().length, 40);
    sink.release();
    for (let i = 40; i < 50; i += 1) w.push(entry(i));
    await waitFor(() => sink.stored.size === 50, 'rows stored');
    await waitFor(() => journalFiles().every((f) => statSync(join(dir, f)).size === 0) && journalFiles().length <= 1, 'settled files deleted');
  });

  it('replays the journal of a dead process once, skipping rows it had already stored', async () => {
    // A process that journaled six rows in one turn, stored a full batch of four, and died
    // before its interval flushed the other two.
    const { writer: first } = make({ batchSize: 4, flushIntervalMs: 60_000 });
    first.start();
    for (let i = 0; i < 6; i += 1) first.push(entry(i));
    await waitFor(() => sink.stored.size === 4, 'four rows stored');
    writer = undefined; // never stopped: killed
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const [file] = journalFiles();
    assert.ok(file);
    const lines = readFileSync(join(dir, file), 'utf8');
    assert.equal(lines.trim().split('\n').length, 6, 'stored rows stay in the open journal until all its rows are settled');
    const deadFile = file.replace(/^journal-\d+-/, `journal-${dead}-`);
    writeFileSync(join(dir, deadFile), lines);
    rmSync(join(dir, file));

    const stored = new Map(sink.stored);
    sink = new FakeSink();
    for (const [id, row] of stored) sink.stored.set(id, row);
    const { writer: second, spool } = make();
    await spool.open();
    assert.ok(!existsSync(join(dir, deadFile)), 'adopted as a spool segment');
    second.start();
    await waitFor(() => sink.stored.size === 6, 'the two unstored rows replayed');
    assert.deepEqual([...sink.stored.values()].map((r) => r.request_id).sort(), Array.from({ length: 6 }, (_, i) => entry(i).requestId));
    assert.equal(second.counters.replayed, 6, 'all six sent; the four already stored are skipped by their log_id');
  });
});
