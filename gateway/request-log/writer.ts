/**
 * The bounded batching writer behind `api_logs`. The request path only calls {@link
 * RequestLogWriter.push} (an array push); everything else runs after it, one database write at a
 * time:
 *
 * - in the event-loop turn that finished the requests (its check phase, `setImmediate`), their
 *   rows are built (the text rule applied, the `log_id` fixed) and appended to the {@link Journal}
 *   with one write for the whole turn, then queued; a row leaves the journal once it is stored,
 *   spooled, quarantined or dropped;
 * - a batch is written when `batchSize` rows are queued or every `flushIntervalMs`, as one
 *   multi-row statement (the {@link LogSink}); the end of a write starts another only for a full
 *   batch, so light traffic costs one statement per interval, not one per request;
 * - a write that fails or takes longer than `writeTimeoutMs` marks the database down: its rows go
 *   to the spool, no new write starts until the slow one settles and a retry delay passed;
 * - the queue holds at most `maxQueue` rows: when full, the whole queue is handed to the spool
 *   (counted and logged, rate-limited) and the new row starts a fresh queue;
 * - once writes succeed again, spool segments are replayed, one per tick;
 * - a batch the database refuses because of a row's data ({@link RowsRefusedError}) is split in
 *   halves, recursively, until the row is isolated: the other rows are written, the row is written
 *   once more cleaned (the shared text rule), and when it is still refused it is quarantined (a
 *   file beside the spool, counted, one warning), never retried. Spool replay does the same, so a
 *   segment holding such a row is written and deleted like any other;
 * - rows are dropped (and counted) only when the spool refuses them (full or unwritable) or more
 *   than {@link MAX_SPILLING} full queues wait for the disk at once.
 */
import type { Logger } from '../../lib/logger';
import type { RequestRecord } from '../surfaces/request-record';
import { buildRow, type RowTexts } from './batch';
import type { RowOptions } from './row';
import { cleanRow } from './clean-row';
import type { Journal, JournalSegment } from './journal';
import type { ApiLogRow } from './row';
import type { Spool } from './spool';

/**
 * The database refused a statement because of the data of one of its rows (PostgreSQL: SQLSTATE
 * class 22 or 23, see postgres-sink.ts). The database is up; the batch must be split.
 */
export class RowsRefusedError extends Error {
  constructor(readonly sqlstate: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'RowsRefusedError';
  }
}

/** Where rows are stored (PostgreSQL in production, a fake in unit tests). */
export interface LogSink {
  /**
   * Stores the rows in one statement; rows whose `log_id` is already stored are skipped. Rejects
   * with {@link RowsRefusedError} when a row's data is refused, with anything else when the
   * database is unreachable or failing.
   */
  write(batch: RowTexts): Promise<void>;
  /** Deletes aggregates past retention (cheap; called about hourly). */
  purge(): Promise<void>;
}

export interface WriterOptions {
  sink: LogSink;
  spool: Spool;
  /** Where rows go the moment they are built (kill -9 safety); none in tests that do not need it. */
  journal?: Journal;
  log: Logger;
  batchSize: number;
  flushIntervalMs: number;
  maxQueue: number;
  writeTimeoutMs: number;
  /** Delay before a write is tried again after a failure. Default: the flush interval, at least 1 s. */
  retryMs?: number;
  /** Milliseconds between aggregate purges. Default one hour. */
  purgeIntervalMs?: number;
  /** `DB_STORE_FULL_CONTENT`: rows keep the newest user message's text. Default false. */
  storeMessageText?: boolean;
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
  /** Rows the database refused even cleaned, appended to the quarantine file (never retried). */
  quarantined: number;
  /** Statements the database refused because of a row's data (each split, or a row isolated). */
  refusedWrites: number;
  /** Rows the journal could not take (the disk refused them): stored as usual, but not safe from a crash. */
  unjournaled: number;
}

/** A built row waiting for the database, and the journal file holding it. */
interface QueuedRow {
  text: string;
  journal: JournalSegment | undefined;
}

/** How one database operation ended. */
type Outcome = { kind: 'ok' } | { kind: 'down' } | { kind: 'refused'; error: RowsRefusedError };

/** Which counter rows stored by a write go to. */
type StoredAs = 'written' | 'replayed';

const WARN_EVERY_MS = 10_000;

export class RequestLogWriter {
  /** Entries pushed during the current event-loop turn, built and journaled at its end. */
  private fresh: RequestRecord[] = [];
  private queue: QueuedRow[] = [];
  private readonly spilling: QueuedRow[][] = [];
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
  readonly counters: WriterCounters = { written: 0, spilled: 0, replayed: 0, dropped: 0, overflows: 0, failedWrites: 0, cleaned: 0, quarantined: 0, refusedWrites: 0, unjournaled: 0 };

  /** What every row keeps beyond the always-logged facts; one object for the writer's life. */
  private readonly rowOptions: RowOptions;

  constructor(private readonly options: WriterOptions) {
    this.rowOptions = { storeMessageText: options.storeMessageText };
  }

  /** Bytes held in the spool and quarantine file now. */
  get spoolBytes(): number {
    return this.options.spool.bytes;
  }

  /** Rows waiting in memory. */
  get queued(): number {
    return this.fresh.length + this.queue.length + this.spilling.reduce((n, q) => n + q.length, 0);
  }

  /**
   * Queues one entry. Never blocks, never throws, never does I/O: the first entry of an
   * event-loop turn schedules {@link admit} for the end of that turn.
   */
  push(entry: RequestRecord): void {
    if (this.fresh.push(entry) === 1) setImmediate(this.admit);
  }

  /**
   * Builds the rows pushed during the event-loop turn that is ending, appends them to the journal
   * in one write (the page cache keeps them if the process dies from here on) and queues them.
   * Runs in the turn's check phase, before the loop polls for new events: a response sent in an
   * earlier turn has its row on disk. One write per turn rather than per finished request:
   * `bench:gateway:cpu` measured a write per finished request at about 18 µs of gateway CPU a request
   * (bench/RESULTS.md). A row that cannot be built is counted as dropped.
   */
  private readonly admit = (): void => {
    const entries = this.fresh;
    this.fresh = [];
    try {
      this.journalRows(entries);
    } finally {
      // The rows are on disk (or could not be): the answers' last bytes may go (held-end.ts).
      for (const entry of entries) entry.releaseResponse();
    }
  };

  private journalRows(entries: readonly RequestRecord[]): void {
    const texts: string[] = [];
    for (const entry of entries) {
      try {
        const built = buildRow(entry, this.rowOptions);
        texts.push(built.text);
        if (built.cleaned) this.counters.cleaned += 1;
      } catch (err) {
        this.counters.dropped += 1;
        this.warn('unbuildable', { error: describeError(err), request_id: entry.requestId }, 'request log: a row could not be built; dropped');
      }
    }
    if (texts.length === 0) return;
    const { journal } = this.options;
    const segment = journal?.append(texts.length === 1 ? `${texts[0]!}\n` : `${texts.join('\n')}\n`, texts.length);
    if (journal && !segment) {
      this.counters.unjournaled += texts.length;
      this.warn('journal_failed', { error: describeError(journal.lastError), unjournaled_total: this.counters.unjournaled }, 'request log journal unwritable; rows are not safe from a crash until it works again');
    }
    for (const text of texts) {
      if (this.queue.length >= this.options.maxQueue) this.overflow();
      this.queue.push({ text, journal: segment });
    }
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
    if (this.fresh.length > 0) this.admit();
    await this.ticking;
    await this.spillPending();
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.batchSize);
      if (this.canWrite()) await this.storeLive(batch, 'shutdown while the database is down');
      else await this.toSpool(batch, 'shutdown while the database is down');
    }
    this.options.journal?.close();
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
      const batch = this.queue.splice(0, this.options.batchSize);
      partial -= batch.length;
      await this.storeLive(batch, 'database write failed');
    }
    // Replay while live rows are not backing up (less than a batch waits), so steady traffic cannot starve it.
    if (this.canWrite() && this.queue.length < this.options.batchSize && this.options.spool.pending) await this.replayOne();
    if (this.canWrite() && Date.now() - this.lastPurge >= (this.options.purgeIntervalMs ?? 3_600_000)) await this.purge();
  }

  /** No write in flight, and the retry delay after a failure has passed. */
  private canWrite(): boolean {
    return this.inFlight === undefined && (this.databaseUp || Date.now() >= this.retryAt);
  }

  /** Stores a batch of queued rows; the rows not stored because the database failed go to the spool. */
  private async storeLive(batch: readonly QueuedRow[], why: string): Promise<void> {
    const texts = batch.map((row) => row.text);
    const done = await this.store(texts, 0, texts.length, 'written');
    this.settle(batch, 0, done);
    if (done < batch.length) await this.toSpool(batch.slice(done), why);
  }

  /** Rows `[from, to)` of `rows` are stored, spooled, quarantined or dropped: the journal may let them go. */
  private settle(rows: readonly QueuedRow[], from: number, to: number): void {
    const { journal } = this.options;
    if (!journal) return;
    let i = from;
    while (i < to) {
      const segment = rows[i]!.journal;
      let n = 0;
      while (i < to && rows[i]!.journal === segment) {
        n += 1;
        i += 1;
      }
      if (segment) journal.settle(segment, n);
    }
  }

  /** Writes rows in one statement with a timeout (see {@link guarded}). */
  private attempt(texts: readonly string[]): Promise<Outcome> {
    return this.guarded(() => this.options.sink.write({ texts }), 'write_failed');
  }

  /**
   * Stores `texts[from, to)`: one statement, and when the database refuses it for a row's data,
   * each half on its own (recursively) until the refused row is alone (see {@link rescue}).
   * Resolves with the index up to which every row is stored or quarantined: `to`, unless the
   * database failed on the way (the rows from there on are not stored; the caller spools them, or
   * leaves them in their spool segment).
   */
  private async store(texts: readonly string[], from: number, to: number, as: StoredAs): Promise<number> {
    if (from >= to) return to;
    const outcome = await this.attempt(from === 0 && to === texts.length ? texts : texts.slice(from, to));
    if (outcome.kind === 'ok') {
      this.counters[as] += to - from;
      return to;
    }
    if (outcome.kind === 'down') return from;
    this.counters.refusedWrites += 1;
    if (to - from === 1) return (await this.rescue(texts[from]!, outcome.error, as)) ? to : from;
    const middle = from + Math.ceil((to - from) / 2);
    const done = await this.store(texts, from, middle, as);
    return done < middle ? done : this.store(texts, middle, to, as);
  }

  /**
   * A row the database refused alone: written once more with every string cleaned (when that
   * changes it), else quarantined. Resolves false only when the database failed meanwhile.
   */
  private async rescue(text: string, refusal: RowsRefusedError, as: StoredAs): Promise<boolean> {
    let row: ApiLogRow | undefined;
    try {
      row = JSON.parse(text) as ApiLogRow;
    } catch {
      row = undefined;
    }
    let reason = refusal;
    const clean = row === undefined ? undefined : cleanRow(row);
    if (clean !== undefined && clean !== row) {
      const outcome = await this.attempt([JSON.stringify(clean)]);
      if (outcome.kind === 'down') return false;
      if (outcome.kind === 'ok') {
        this.counters[as] += 1;
        this.counters.cleaned += 1;
        return true;
      }
      this.counters.refusedWrites += 1;
      reason = outcome.error;
    }
    await this.quarantine(text, row, reason);
    return true;
  }

  /** Keeps a refused row in the quarantine file, with one warning naming it and the reason. */
  private async quarantine(text: string, row: ApiLogRow | undefined, refusal: RowsRefusedError): Promise<void> {
    const { spool, log } = this.options;
    const kept = await spool.quarantine(text, { sqlstate: refusal.sqlstate, message: refusal.message });
    if (!kept) {
      this.counters.dropped += 1;
      this.warn('spool_full', { dropped_total: this.counters.dropped, spool_bytes: spool.bytes, why: 'quarantine' }, 'request log spool full or unwritable; a refused row is dropped');
      return;
    }
    this.counters.quarantined += 1;
    log.warn({
      event: 'request_log_quarantined', request_id: row?.request_id, log_id: row?.log_id, sqlstate: refusal.sqlstate, reason: refusal.message,
      file: spool.quarantinePath, quarantined_total: this.counters.quarantined,
    }, 'request log: PostgreSQL refused a row even cleaned; kept in the quarantine file, not retried');
  }

  /**
   * Runs one database operation with the write timeout. A timed-out operation stays in flight
   * (no new one starts) until it settles: a stopped server cannot pile up hung connections. A
   * refusal of a row's data proves the database up: it neither counts as a failed write nor
   * delays the next one.
   */
  private async guarded(operation: () => Promise<void>, failure: string): Promise<Outcome> {
    let timer: NodeJS.Timeout | undefined;
    const settled = Promise.resolve().then(operation).then((): Outcome => {
      this.answered();
      return { kind: 'ok' };
    }, (err: unknown): Outcome => {
      if (err instanceof RowsRefusedError) {
        this.answered();
        return { kind: 'refused', error: err };
      }
      this.warn(failure, { error: describeError(err) }, 'request log database operation failed; rows go to the spool');
      return { kind: 'down' };
    });
    this.inFlight = settled.then(() => {
      this.inFlight = undefined;
      this.schedule();
    });
    const timeout = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'down' }), this.options.writeTimeoutMs);
    });
    const outcome = await Promise.race([settled, timeout]);
    clearTimeout(timer);
    if (outcome.kind !== 'down') return outcome;
    this.counters.failedWrites += 1;
    this.databaseUp = false;
    this.retryAt = Date.now() + (this.options.retryMs ?? Math.max(1000, this.options.flushIntervalMs));
    return outcome;
  }

  private answered(): void {
    if (!this.databaseUp) this.options.log.info({ event: 'request_log_database_back' }, 'request log: database answers again');
    this.databaseUp = true;
  }

  /**
   * Replays the oldest spool segment in batches, its lines as they were stored. A row refused for
   * its data is isolated and cleaned or quarantined like a live one, so the segment is always
   * deleted once the database answers; it is kept only when the database fails meanwhile (its rows
   * are replayed again later, and their `log_id` makes that harmless).
   */
  private async replayOne(): Promise<void> {
    const segment = await this.options.spool.oldest();
    if (!segment) return;
    const { texts } = segment;
    for (let i = 0; i < texts.length; i += this.options.batchSize) {
      const to = Math.min(texts.length, i + this.options.batchSize);
      if ((await this.store(texts, i, to, 'replayed')) < to) return;
    }
    await segment.remove();
    this.options.log.info({ event: 'request_log_spool_replayed', rows: texts.length, segment: segment.name }, 'request log: spooled rows stored');
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
          await this.toSpool(this.spilling[0]!, 'queue full');
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

  /** Appends rows to the spool (the rows it refuses are dropped and counted); the journal lets them go. */
  private async toSpool(rows: readonly QueuedRow[], why: string): Promise<void> {
    const stored = await this.options.spool.append({ texts: rows.map((row) => row.text) });
    this.settle(rows, 0, rows.length);
    this.counters.spilled += stored;
    if (stored < rows.length) {
      this.counters.dropped += rows.length - stored;
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

/** An error for a log line: its SQLSTATE or name and the end of its message (knex puts the whole statement, batch included, before the server's message). */
function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const message = err.message.length > 300 ? `…${err.message.slice(-300)}` : err.message;
  return `${typeof code === 'string' ? code : err.name}: ${message}`;
}
