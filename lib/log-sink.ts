/**
 * Where every process's log lines go: standard output, written in batches. A line is appended to
 * an array (no per-line byte counting, no string concatenation); the array is joined and written
 * once 64 Ki characters wait, every 250 ms, and synchronously when the process exits. At most one
 * write is in flight (on libuv's thread pool, so a slow reader of standard output never blocks the
 * event loop); partial writes continue where they stopped and a full non-blocking pipe (`EAGAIN`)
 * is retried. When more than `maxPendingChars` wait behind a stuck (or very slow) write, new lines are dropped
 * and counted, and a line saying how many follows once writing resumes: memory stays bounded.
 *
 * This replaces pino's sonic-boom destination, which measured about 5.5 µs of CPU per line against
 * 1.4 µs here (docs/gateway-performance.md): it counts the bytes of its whole pending buffer on
 * every line.
 */
import { write, writeSync } from 'node:fs';

export interface LineSinkOptions {
  /** File descriptor written to. Default 1 (standard output). */
  fd?: number;
  /** Characters that trigger a write. Default 64 Ki. */
  flushChars?: number;
  /** Longest a line waits when traffic is low. Default 250 ms. */
  flushIntervalMs?: number;
  /** Characters kept while a write is stuck; beyond, lines are dropped and counted. Default 16 Mi. */
  maxPendingChars?: number;
}

/** Delay before a write refused with `EAGAIN` (full non-blocking pipe) is tried again. */
const RETRY_MS = 10;

export class BatchedLineSink {
  private parts: string[] = [];
  private pending = 0;
  private writing = false;
  private dropped = 0;
  private readonly fd: number;
  private readonly flushChars: number;
  private readonly maxPending: number;
  private readonly timer: NodeJS.Timeout;

  constructor(options: LineSinkOptions = {}) {
    this.fd = options.fd ?? 1;
    this.flushChars = options.flushChars ?? 64 * 1024;
    this.maxPending = options.maxPendingChars ?? 16 * 1024 * 1024;
    this.timer = setInterval(() => this.flush(), options.flushIntervalMs ?? 250);
    this.timer.unref();
  }

  /** Lines dropped since the last notice (a stuck reader). */
  get droppedLines(): number {
    return this.dropped;
  }

  /** Queues one line (pino passes each line with its newline). */
  write(line: string): void {
    if (this.pending >= this.maxPending) {
      this.dropped += 1;
      return;
    }
    this.parts.push(line);
    this.pending += line.length;
    if (this.pending >= this.flushChars) this.flush();
  }

  /** Starts writing what waits, unless a write is already in flight (it continues when that one ends). */
  flush(): void {
    if (this.writing || this.pending === 0) return;
    this.send(Buffer.from(this.take()));
  }

  /**
   * Writes what waits synchronously (at exit). A batch already handed to the thread pool is not
   * written again: a line may be lost when the process ends during that write, never duplicated.
   */
  flushSync(): void {
    if (this.pending === 0 && this.dropped === 0) return;
    let buf = Buffer.from(this.take());
    for (let attempts = 0; buf.length > 0 && attempts < 1000; attempts += 1) {
      try {
        buf = buf.subarray(writeSync(this.fd, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      }
    }
  }

  /** Stops the interval (tests; processes simply exit). */
  close(): void {
    clearInterval(this.timer);
    this.flushSync();
  }

  private take(): string {
    let text = this.parts.join('');
    this.parts = [];
    this.pending = 0;
    if (this.dropped > 0) {
      text += `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), event: 'log_lines_dropped', dropped: this.dropped, msg: 'log lines dropped: standard output was not being read' })}\n`;
      this.dropped = 0;
    }
    return text;
  }

  private send(buf: Buffer): void {
    this.writing = true;
    write(this.fd, buf, 0, buf.length, null, (err, written) => {
      if (err) {
        if (err.code === 'EAGAIN') {
          setTimeout(() => this.send(buf), RETRY_MS).unref();
          return;
        }
        // Nowhere left to report it: the batch is lost, later lines are still tried.
      } else if (written < buf.length) {
        this.send(buf.subarray(written));
        return;
      }
      this.writing = false;
      if (this.pending >= this.flushChars || this.dropped > 0) this.flush();
    });
  }
}
