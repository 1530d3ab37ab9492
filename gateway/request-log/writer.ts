/**
 * The bounded batching writer behind `api_logs`. The request path only calls {@link
 * RequestLogWriter.push} (an array push); everything else runs in the background, one database
 * write at a time:
 *
 * - a batch is written when `batchSize` rows are queued or every `flushIntervalMs`, as one
 *   multi-row statement (the {@link LogSink}); the end of a write starts another only for a full
 *   batch, so light traffic costs one statement per interval, not one per request;
 * - a write that fails or takes longer than `writeTimeoutMs` marks the database down: its rows go
 *   to the spool, no new write starts until the slow one settles and a retry delay passed;
 * - the queue holds at most `maxQueue` rows: when full, the whole queue is handed to the spool
 *   (counted and logged, rate-limited) and the new row starts a fresh queue;
 * - once writes succeed again, spool segments are replayed, one per tick;
 * - rows are dropped (and counted) only when the spool refuses them (full or unwritable) or more
 *   than {@link MAX_SPILLING} full queues wait for the disk at once.
 */
import type { Logger } from '../../lib/logger';
import type { LogEntry } from './entry';
import { buildBatch, serializeRows, type RowBatch } from './batch';
import type { Spool } from './spool';

/** Where rows are stored (PostgreSQL in production, a fake in unit tests). */
export interface LogSink {
  /** Stores the batch's rows in one statement; rows whose `log_id` is already stored are skipped. */
  write(batch: RowBatch): Promise<void>;
  /** Deletes aggregates past retention (cheap; called about hourly). */
  purge(): Promise<void>;
}

export interface WriterOptions {
  sink: LogSink;
  spool: Spool;
  log: Logger;
  batchSize: number;
  flushIntervalMs: number;
  maxQueue: number;
  writeTimeoutMs: number;
  /** Delay before a write is tried again after a failure. Default: the flush interval, at least 1 s. */
  retryMs?: number;
  /** Milliseconds between aggregate purges. Default one hour. */
  purgeIntervalMs?: number;
}

/** Full queues that may wait for the spool at once; beyond that, overflow is dropped. */
export const MAX_SPILLING = 4;

/** Running totals, for logs, tests and operators. */
export interface WriterCounters {
  /** Rows stored by live batches. */
  written: number;
  /** Rows that went to the spool (overflow, failed or timed-out writes, shutdown while down). */
  spilled: number;
  /** Rows stored from the spool. */
  replayed: number;
  /** Rows lost: the spool was full or unwritable, or it could not keep up. */
  dropped: number;
  /** Times the queue was full. */
  overflows: number;
  /** Writes that failed or timed out. */
  failedWrites: number;
  /** Rows stored with U+FFFD in place of a NUL or an unpaired surrogate (the shared text rule, clean-row.ts). */
  cleaned: number;
}

const WARN_EVERY_MS = 10_000;

export class RequestLogWriter {
  private queue: LogEntry[] = [];
  private readonly spilling: LogEntry[][] = [];
  private inFlight: Promise<void> | undefined;
  private ticking: Promise<void> | undefined;
  private spillRun: Promise<void> | undefined;
  private scheduled = false;
  /** The interval passed since the last flush of a partly filled batch: write what is queued at the next chance. */
  private partialDue = false;
  private timer: NodeJS.Timeout | undefined;
  private databaseUp = true;
  private retryAt = 0;
  private lastPurge = 0;
  private stopped = false;
  private readonly lastWarn = new Map<string, number>();
  readonly counters: WriterCounters = { written: 0, spilled: 0, replayed: 0, dropped: 0, overflows: 0, failedWrites: 0, cleaned: 0 };

  constructor(private readonly options: WriterOptions) {}

  /** Rows waiting in memory. */
  get queued(): number {
    return this.queue.length + this.spilling.reduce((n, q) => n + q.length, 0);
  }

  /** Queues one entry. Never blocks, never throws, never does I/O. */
  push(entry: LogEntry): void {
    if (this.queue.length >= this.options.maxQueue) this.overflow();
    this.queue.push(entry);
    if (this.queue.length >= this.options.batchSize) this.schedule();
  }

  /** Starts the flush timer. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      this.partialDue = true;
      this.schedule();
    }, this.options.flushIntervalMs);
    this.timer.unref();
    this.schedule();
  }

  /**
   * Stops the timer and stores what is queued: written when the database answers, else spooled.
   * Resolves once every row is stored, spooled or counted as dropped.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    await this.spillPending();
    while (this.queue.length > 0) {
      const batch = await this.takeBatch();
      if (!this.canWrite() || !(await this.attempt(batch))) await this.toSpool(batch, 'shutdown while the database is down');
      else this.counters.written += batch.rows.length;
    }
    this.options.log.info({ event: 'request_log_stopped', ...this.counters, spool_bytes: this.options.spool.bytes }, 'request log writer stopped');
  }

  private schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.ticking) void this.runTick();
    });
  }

  private runTick(): Promise<void> {
    this.ticking = this.tick()
      .catch((err: unknown) => this.options.log.error({ err, event: 'request_log_tick_failed' }, 'request log flush failed'))
      .finally(() => {
        this.ticking = undefined;
      });
    return this.ticking;
  }

  /**
   * Writes full batches; when the interval is due, also the rows queued at that moment (not rows
   * arriving meanwhile: under steady light traffic something is always queued, and writing it the
   * moment the previous write ends would be a statement per request).
   */
  private async tick(): Promise<void> {
    if (!this.canWrite()) return; // a due interval stays due: the write in flight schedules a tick when it ends
    let partial = this.partialDue ? this.queue.length : 0;
    this.partialDue = false;
    while (this.canWrite() && (this.queue.length >= this.options.batchSize || (partial > 0 && this.queue.length > 0))) {
      const batch = await this.takeBatch();
      partial -= batch.rows.length;
      if (await this.attempt(batch)) this.counters.written += batch.rows.length;
      else await this.toSpool(batch, 'database write failed');
    }
    // Replay while live rows are not backing up (less than a batch waits), so steady traffic cannot starve it.
    if (this.canWrite() && this.queue.length < this.options.batchSize && this.options.spool.pending) await this.replayOne();
    if (this.canWrite() && Date.now() - this.lastPurge >= (this.options.purgeIntervalMs ?? 3_600_000)) await this.purge();
  }

  /** No write in flight, and the retry delay after a failure has passed. */
  private canWrite(): boolean {
    return this.inFlight === undefined && (this.databaseUp || Date.now() >= this.retryAt);
  }

  /**
   * Takes a batch off the queue and builds its rows in time-cut slices (see batch.ts): a full
   * batch never blocks requests for more than a slice.
   */
  private takeBatch(): Promise<RowBatch> {
    return this.build(this.queue.splice(0, this.options.batchSize));
  }

  private async build(entries: readonly LogEntry[]): Promise<RowBatch> {
    const batch = await buildBatch(entries);
    this.counters.cleaned += batch.cleaned ?? 0;
    return batch;
  }

  /** Writes a batch with a timeout (see {@link guarded}). */
  private attempt(batch: RowBatch): Promise<boolean> {
    return this.guarded(() => this.options.sink.write(batch), 'write_failed');
  }

  /**
   * Runs one database operation with the write timeout. A timed-out operation stays in flight
   * (no new one starts) until it settles: a stopped server cannot pile up hung connections.
   */
  private async guarded(operation: () => Promise<void>, failure: string): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const settled = Promise.resolve().then(operation).then(() => {
      if (!this.databaseUp) this.options.log.info({ event: 'request_log_database_back' }, 'request log: database answers again');
      this.databaseUp = true;
      return true;
    }, (err: unknown) => {
      this.warn(failure, { err }, 'request log database operation failed; rows go to the spool');
      return false;
    });
    this.inFlight = settled.then(() => {
      this.inFlight = undefined;
      this.schedule();
    });
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.options.writeTimeoutMs);
    });
    const ok = await Promise.race([settled, timeout]);
    clearTimeout(timer);
    if (ok) return true;
    this.counters.failedWrites += 1;
    this.databaseUp = false;
    this.retryAt = Date.now() + (this.options.retryMs ?? Math.max(1000, this.options.flushIntervalMs));
    return false;
  }

  private async replayOne(): Promise<void> {
    const segment = await this.options.spool.oldest();
    if (!segment) return;
    for (let i = 0; i < segment.rows.length; i += this.options.batchSize) {
      const batch = await serializeRows(segment.rows.slice(i, i + this.options.batchSize));
      if (!(await this.attempt(batch))) return; // kept: replaying it again adds nothing twice
    }
    await segment.remove();
    this.counters.replayed += segment.rows.length;
    this.options.log.info({ event: 'request_log_spool_replayed', rows: segment.rows.length, segment: segment.name }, 'request log: spooled rows stored');
    if (this.options.spool.pending) this.schedule();
  }

  private async purge(): Promise<void> {
    this.lastPurge = Date.now();
    await this.guarded(() => this.options.sink.purge(), 'purge_failed');
  }

  /** The queue is full: hand it to the spool in the background. */
  private overflow(): void {
    this.counters.overflows += 1;
    if (this.spilling.length >= MAX_SPILLING) {
      this.counters.dropped += this.queue.length;
      this.warn('dropped', { dropped_total: this.counters.dropped }, 'request log: the spool cannot keep up; rows dropped');
    } else {
      this.spilling.push(this.queue);
      this.warn('overflow', { overflows: this.counters.overflows, spilled_total: this.counters.spilled }, 'request log queue full; rows go to the spool');
    }
    this.queue = [];
    void this.spillPending();
  }

  /** Writes overflowed queues to the spool, independently of (and never waiting for) the database. */
  private spillPending(): Promise<void> {
    if (this.spillRun) return this.spillRun;
    if (this.spilling.length === 0) return Promise.resolve();
    const run = (async () => {
      try {
        while (this.spilling.length > 0) {
          const entries = this.spilling[0]!;
          await this.toSpool(await this.build(entries), 'queue full');
          this.spilling.shift();
        }
      } catch (err) {
        this.options.log.error({ err, event: 'request_log_spill_failed' }, 'request log spill failed');
      }
    })();
    this.spillRun = run.finally(() => {
      this.spillRun = undefined;
    });
    return this.spillRun;
  }

  private async toSpool(batch: RowBatch, why: string): Promise<void> {
    const stored = await this.options.spool.append(batch);
    this.counters.spilled += stored;
    if (stored < batch.rows.length) {
      this.counters.dropped += batch.rows.length - stored;
      this.warn('spool_full', { dropped_total: this.counters.dropped, spool_bytes: this.options.spool.bytes, why }, 'request log spool full or unwritable; rows dropped');
    }
  }

  /** A warning at most every 10 s per kind. */
  private warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - (this.lastWarn.get(kind) ?? 0) < WARN_EVERY_MS) return;
    this.lastWarn.set(kind, now);
    this.options.log.warn({ event: `request_log_${kind}`, ...fields }, message);
  }
}
