/**
 * The request log's overflow spool: append-only JSONL segment files in one directory, holding
 * rows the database could not take (queue full, insert failed or timed out). Segments are
 * replayed oldest first once the database answers and deleted after their rows are in; a row
 * carries its `log_id`, so a segment replayed twice adds nothing twice. The total size is
 * capped: rows beyond it (or when the directory is unwritable) are refused, and the caller counts
 * them as dropped. Segments left by a process that is gone are adopted at start, and so are the
 * journal files it left (journal.ts): the same lines, replayed the same way.
 *
 * Rows PostgreSQL refuses for their data, even cleaned, are appended to {@link QUARANTINE_FILE}
 * in the same directory (within the same cap) and never replayed: an operator reads them there.
 */
import { appendFile, mkdir, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiLogRow } from './row';
import type { RowTexts } from './batch';
import { JOURNAL_FILE } from './journal';
import { processAlive } from '../../lib/process-alive';

export interface SpoolOptions {
  dir: string;
  maxBytes: number;
  /** A segment is closed (and becomes replayable) past this size. Default 4 MiB. */
  segmentBytes?: number;
}

/** A closed segment's rows; `remove` deletes it once they are stored. */
export interface SpoolSegment {
  name: string;
  rows: ApiLogRow[];
  /** Each row's line as stored (its JSON text), replayed as it is. */
  texts: string[];
  remove(): Promise<void>;
}

/** Rows the database refused for their data, one JSON object a line: `{"at", "sqlstate", "error", "row"}`. */
export const QUARANTINE_FILE = 'quarantine.jsonl';

/** Why a row was quarantined. */
export interface QuarantineReason {
  sqlstate: string;
  message: string;
}

const SEGMENT = /^(\d+)-(\d+)-(\d+)\.jsonl$/;

/** Identity of each spool of this process (a spool adopts the segments of an earlier one, e.g. after a restart in tests). */
let lastStamp = 0;
function nextStamp(): number {
  lastStamp = Math.max(Date.now(), lastStamp + 1);
  return lastStamp;
}


export class Spool {
  private readonly segmentBytes: number;
  /** Closed segments awaiting replay, oldest first. */
  private readonly closed: string[] = [];
  private current: string | undefined;
  private currentBytes = 0;
  private totalBytes = 0;
  private quarantineBytes = 0;
  private seq = 0;
  /** This spool's identity within the process; the journal of this process names its files with it. */
  readonly stamp = nextStamp();
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: SpoolOptions) {
    this.segmentBytes = options.segmentBytes ?? 4 * 1024 * 1024;
  }

  /** Bytes held on disk (segments and the quarantine file). */
  get bytes(): number {
    return this.totalBytes + this.quarantineBytes;
  }

  /** The quarantine file's path. */
  get quarantinePath(): string {
    return join(this.options.dir, QUARANTINE_FILE);
  }

  /** Whether rows wait for replay (in closed segments or the open one). */
  get pending(): boolean {
    return this.closed.length > 0 || this.currentBytes > 0;
  }

  /** Creates the directory and adopts the segments of processes that are gone. Throws when unusable. */
  async open(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true });
    this.quarantineBytes = await stat(this.quarantinePath).then((s) => s.size, () => 0);
    for (const name of (await readdir(this.options.dir)).sort(bySequence)) {
      const journal = JOURNAL_FILE.exec(name);
      const match = SEGMENT.exec(name) ?? journal;
      if (!match || !this.orphaned(Number(match[1]), Number(match[2]))) continue;
      if (journal && (await stat(join(this.options.dir, name)).then((s) => s.size, () => 0)) === 0) {
        await unlink(join(this.options.dir, name)).catch(() => undefined); // a journal whose rows were all settled
        continue;
      }
      const adopted = this.nextName();
      try {
        await rename(join(this.options.dir, name), join(this.options.dir, adopted));
      } catch {
        continue; // adopted by another process first
      }
      this.closed.push(adopted);
      this.totalBytes += (await stat(join(this.options.dir, adopted))).size;
    }
  }

  /** A segment of a process that is gone, or of an earlier spool of this process. */
  private orphaned(pid: number, stamp: number): boolean {
    return pid === process.pid ? stamp !== this.stamp : !processAlive(pid);
  }

  /**
   * Appends a batch's rows (their texts, serialized when the batch was built); resolves with how
   * many were stored. Rows that would pass the size cap, or that could not be written, are not stored.
   */
  append(batch: RowTexts): Promise<number> {
    const run = this.tail.then(() => this.write(batch.texts));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async write(texts: readonly string[]): Promise<number> {
    let text = '';
    let bytes = 0;
    let accepted = 0;
    for (const rowText of texts) {
      const line = `${rowText}\n`;
      const size = Buffer.byteLength(line);
      if (this.bytes + bytes + size > this.options.maxBytes) break;
      text += line;
      bytes += size;
      accepted += 1;
    }
    if (accepted === 0) return 0;
    if (!this.current || this.currentBytes >= this.segmentBytes) this.rotate();
    const path = join(this.options.dir, this.current!);
    try {
      await appendFile(path, text, { mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return 0;
      // The directory is made on first use (or was removed): create it and try once more.
      try {
        await mkdir(this.options.dir, { recursive: true });
        await appendFile(path, text, { mode: 0o600 });
      } catch {
        return 0;
      }
    }
    this.currentBytes += bytes;
    this.totalBytes += bytes;
    return accepted;
  }

  /**
   * Appends a row the database refused to the quarantine file; resolves false when the size cap
   * or the disk refused it (the caller counts it as dropped).
   */
  quarantine(text: string, reason: QuarantineReason): Promise<boolean> {
    const run = this.tail.then(async () => {
      let row: string;
      try {
        JSON.parse(text);
        row = text;
      } catch {
        row = JSON.stringify(text); // kept as a string when it is not JSON
      }
      const line = `{"at":${JSON.stringify(new Date().toISOString())},"sqlstate":${JSON.stringify(reason.sqlstate)},"error":${JSON.stringify(reason.message)},"row":${row}}\n`;
      const size = Buffer.byteLength(line);
      if (this.bytes + size > this.options.maxBytes) return false;
      try {
        await mkdir(this.options.dir, { recursive: true });
        await appendFile(this.quarantinePath, line, { mode: 0o600 });
      } catch {
        return false;
      }
      this.quarantineBytes += size;
      return true;
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private nextName(): string {
    this.seq += 1;
    return `${process.pid}-${this.stamp}-${this.seq}.jsonl`;
  }

  private rotate(): void {
    if (this.current && this.currentBytes > 0) this.closed.push(this.current);
    this.current = this.nextName();
    this.currentBytes = 0;
  }

  /** The oldest segment's rows (closing the open segment when it is the only one), or undefined. */
  async oldest(): Promise<SpoolSegment | undefined> {
    await this.tail;
    if (this.closed.length === 0 && this.currentBytes > 0) this.rotate();
    const name = this.closed[0];
    if (!name) return undefined;
    const path = join(this.options.dir, name);
    const text = await readFile(path, 'utf8');
    const rows: ApiLogRow[] = [];
    const texts: string[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        rows.push(JSON.parse(line) as ApiLogRow);
        texts.push(line);
      } catch {
        // A line cut short by a crash mid-write: the rest of the segment is still replayed.
      }
    }
    return {
      name,
      rows,
      texts,
      remove: async () => {
        await unlink(path).catch(() => undefined);
        this.closed.splice(this.closed.indexOf(name), 1);
        this.totalBytes = Math.max(0, this.totalBytes - Buffer.byteLength(text));
      },
    };
  }
}

/** Orders segment names by pid stamp and sequence number (numerically). */
function bySequence(a: string, b: string): number {
  const ma = SEGMENT.exec(a);
  const mb = SEGMENT.exec(b);
  if (!ma || !mb) return a.localeCompare(b);
  return Number(ma[2]) - Number(mb[2]) || Number(ma[3]) - Number(mb[3]) || Number(ma[1]) - Number(mb[1]);
}
