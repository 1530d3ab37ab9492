/**
 * `npx tsx bench/request-log/run.ts`: what the request log costs. Prints (does not assert):
 *
 * 1. the hot-path calls, `RequestRecord.end` and `RequestLog.finish` (flag checks, the record pushed), in ns per request;
 * 2. flush throughput into PostgreSQL (row building at flush time plus one statement per batch,
 *    `provider_hourly_stats` included), in rows per second, against a fresh test database, and the
 *    longest the flush kept the event loop from turning (what a request arriving meanwhile waits),
 *    for a short user message and for a 16 KiB one (an agent's tool output).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { RequestLog } from '../../gateway/request-log';
import { postgresSink } from '../../gateway/request-log/postgres-sink';
import { toApiLogRow } from '../../gateway/request-log/row';
import { Spool } from '../../gateway/request-log/spool';
import { RequestLogWriter, type LogSink } from '../../gateway/request-log/writer';
import type { RequestRecord } from '../../gateway/surfaces/request-record';
import { freshDatabase } from '../../test/support/db';
import { captureLogs } from '../../test/support/logs';
import { requestRecord } from '../../test/support/request-log-fakes';

const N = 200_000;
const req = { headers: { 'user-agent': 'claude-cli/1.0.3 (external, cli)', 'x-session-id': 's' } } as unknown as IncomingMessage;
const res = { destroyed: false, writableEnded: true, statusCode: 200 } as ServerResponse;
/** Messages arrive through JSON.parse, which makes flat strings (`repeat` makes a rope, slower to scan). */
const flat = (text: string): string => JSON.parse(JSON.stringify(text)) as string;
const message = flat('Please refactor the parser so that it handles nested quotes. '.repeat(8));

const LONG_MESSAGE = flat('const value = compute(input); // tool output line with some code in it\n'.repeat(230).slice(0, 16 * 1024));

/**
 * Runs `work` while a setImmediate chain notes the longest gap between two of its turns: the
 * longest stretch the event loop did not turn (synchronous work or a garbage-collection pause),
 * which is what a request arriving then would wait for. Also returns the longest GC pause seen.
 */
async function withStallProbe(work: () => Promise<void>): Promise<{ stall: number; gc: number }> {
  let longest = 0;
  let gc = 0;
  let last = performance.now();
  let running = true;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gc = Math.max(gc, entry.duration);
  });
  observer.observe({ entryTypes: ['gc'] });
  const probe = (): void => {
    const now = performance.now();
    if (now - last > longest) longest = now - last;
    last = now;
    if (running) setImmediate(probe);
  };
  setImmediate(probe);
  try {
    await work();
  } finally {
    running = false;
    observer.disconnect();
  }
  return { stall: longest, gc };
}

function state(i: number, lastUserMessage = message): RequestRecord {
  return requestRecord({
    requestId: `r${i}`, startedAt: performance.now(), caller: { role: 'pro', via: 'api_key', userId: 1, apiKeyId: 2 }, model: 'm', stream: false,
    routing: { provider: 'p', base_url: 'http://u/v1', endpoint_id: 'ep' }, usage: { prompt_tokens: 900, completion_tokens: 120, cache_read_tokens: 512 },
    pricing: { prompt: '3', completion: '15', input_cache_reads: '0.3' }, numUserTurns: 3, numToolCalls: 1, lastUserMessage,
  });
}

function writer(sink: LogSink, dir: string): RequestLogWriter {
  return new RequestLogWriter({
    sink, spool: new Spool({ dir, maxBytes: 1e9 }), log: captureLogs('bench', 'warn').log,
    batchSize: 500, flushIntervalMs: 1000, maxQueue: N, writeTimeoutMs: 30_000,
  });
}

/** Times the request path's call; its 200,000 states are garbage once it returns. */
async function timeFinish(dir: string): Promise<void> {
  const states = Array.from({ length: N }, (_, i) => state(i));
  const noop: LogSink = { write: () => Promise.resolve(), purge: () => Promise.resolve() };
  const log = new RequestLog(writer(noop, dir), { flag: () => false }, captureLogs('bench', 'warn').log);
  // Requests arrive in waves with the event loop turning between them, so the writer drains the
  // queue as in production; only the synchronous finish() calls are timed.
  let spent = 0;
  for (let wave = 0; wave < N; wave += 500) {
    const started = performance.now();
    for (let i = wave; i < wave + 500; i += 1) {
      const record = states[i]!;
      record.end(req, res);
      log.finish(record);
    }
    spent += performance.now() - started;
    await new Promise((r) => setImmediate(r));
  }
  console.log(`end() + finish() on the request path: ${((spent * 1e6) / N).toFixed(0)} ns per request (${N} requests in waves of 500)`);
  await log.writer.stop();
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
  const t = await freshDatabase();
  try {
    // First, while the heap holds only what this phase makes (GC pauses depend on the heap).
    for (const [label, text] of [[`${message.length}-character`, message], ['16 KiB', LONG_MESSAGE]] as const) {
      const pg = new RequestLog(writer(postgresSink(t.db), dir), { flag: () => false }, captureLogs('bench', 'warn').log);
      const rows = 20_000;
      for (let i = 0; i < rows; i += 1) {
        const record = state(i, text);
        record.end(req, res);
        pg.finish(record);
      }
      const flushStarted = performance.now();
      const { stall, gc } = await withStallProbe(() => pg.writer.stop());
      const seconds = (performance.now() - flushStarted) / 1000;
      console.log(`draining ${rows} queued rows into PostgreSQL, ${label} user messages: ${Math.round(rows / seconds)} rows/s (batches of 500, stats upsert included); longest event-loop stall ${stall.toFixed(2)} ms (longest GC pause ${gc.toFixed(2)} ms)`);
    }
  } finally {
    await t.drop();
  }

  await timeFinish(dir);
  const rowsStarted = performance.now();
  for (let i = 0; i < 20_000; i += 1) toApiLogRow(baseEntry(i));
  console.log(`row building at flush time: ${(((performance.now() - rowsStarted) * 1e3) / 20_000).toFixed(1)} µs per row`);
  rmSync(dir, { recursive: true, force: true });
}

function baseEntry(i: number): RequestRecord {
  return Object.assign(state(i), { at: Date.now(), status: 200, latencyMs: 10, userAgent: 'claude-cli/1.0.3', sessionId: 's' });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
