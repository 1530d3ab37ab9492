/**
 * The request log's journal: every row, as soon as it is built, is appended to a local file with
 * one `write(2)` for all the rows built in the same turn of the event loop. The write lands in the
 * kernel's page cache, which outlives the process: after a `kill -9` (or a crash of Node) the
 * rows of every answered request are on disk, and the next gateway started on the same spool
 * directory adopts the journal like a spool segment and replays it (the rows carry their `log_id`,
 * fixed when they were built, so rows already stored are skipped). A machine crash can still lose
 * what the kernel had not yet written back (docs/request-log.md, "Guarantees").
 *
 * Files are `journal-<pid>-<stamp>-<seq>.jsonl` in the spool directory, one row's JSON a line.
 * The writer settles rows once they are stored, spooled, quarantined or dropped; a file whose
 * rows are all settled is deleted (or, the open one, truncated), and the open file is rotated past
 * {@link JournalOptions.segmentBytes}. Every call is synchronous: appends and truncation never
 * interleave.
 */
import { closeSync, ftruncateSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Journal file names: the pid and stamp of the spool that wrote them, and a sequence number. */
export const JOURNAL_FILE = /^journal-(\d+)-(\d+)-(\d+)\.jsonl$/;

export interface JournalOptions {
  dir: string;
  /** The stamp of this process's spool: files with this pid and stamp are never adopted. */
  stamp: number;
  /** The open file is rotated past this size. Default 4 MiB. */
  segmentBytes?: number;
}

/** One journal file and how many of its rows are not settled yet. */
export class JournalSegment {
  outstanding = 0;
  bytes = 0;
  constructor(readonly path: string, readonly fd: number) {}
}

export class Journal {
  private current: JournalSegment | undefined;
  private seq = 0;
  private readonly segmentBytes: number;
  /** The last error of a failed append, for the writer's warning. */
  lastError: unknown;

  constructor(private readonly options: JournalOptions) {
    this.segmentBytes = options.segmentBytes ?? 4 * 1024 * 1024;
  }

  /**
   * Appends `text` (`rows` lines, each ending in a newline) in one write; returns the file now
   * holding them, or undefined when the disk refused them (they are then not safe from a crash).
   */
  append(text: string, rows: number): JournalSegment | undefined {
    let segment: JournalSegment;
    try {
      segment = this.current ??= this.open();
    } catch (err) {
      this.lastError = err;
      return undefined;
    }
    try {
      let written = writeSync(segment.fd, text);
      const bytes = Buffer.byteLength(text);
      if (written < bytes) {
        // A short write (a full disk): finish it from the bytes, or fail trying.
        const buffer = Buffer.from(text, 'utf8');
        while (written < bytes) written += writeSync(segment.fd, buffer, written);
      }
      segment.bytes += bytes;
    } catch (err) {
      // Part of a line may be in the file: later rows start a new file (replay skips a torn line).
      this.lastError = err;
      this.rotate();
      return undefined;
    }
    segment.outstanding += rows;
    if (segment.bytes >= this.segmentBytes) this.rotate();
    return segment;
  }

  /** `rows` rows of `segment` are stored, spooled, quarantined or dropped. */
  settle(segment: JournalSegment, rows: number): void {
    segment.outstanding -= rows;
    if (segment.outstanding > 0) return;
    try {
      if (segment === this.current) {
        if (segment.bytes > 0) ftruncateSync(segment.fd, 0);
        segment.bytes = 0;
      } else {
        unlinkSync(segment.path);
      }
    } catch {
      // The file stays: replaying it later stores nothing twice.
    }
  }

  /** Closes the open file; deletes it when all its rows are settled (a clean shutdown). */
  close(): void {
    this.rotate();
  }

  private open(): JournalSegment {
    this.seq += 1;
    const path = join(this.options.dir, `journal-${process.pid}-${this.options.stamp}-${this.seq}.jsonl`);
    let fd: number;
    try {
      fd = openSync(path, 'a', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      mkdirSync(this.options.dir, { recursive: true });
      fd = openSync(path, 'a', 0o600);
    }
    return new JournalSegment(path, fd);
  }

  /** Closes the open file; it is deleted once its last row is settled (at once when none is pending). */
  private rotate(): void {
    const segment = this.current;
    if (!segment) return;
    this.current = undefined;
    try {
      closeSync(segment.fd);
    } catch {
      // nothing more to write to it anyway
    }
    if (segment.outstanding <= 0) {
      try {
        unlinkSync(segment.path);
      } catch {
        // already gone
      }
    }
  }
}
