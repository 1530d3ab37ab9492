/**
 * Rows and their JSON texts. The writer builds one row at a time with {@link buildRow}, at the end
 * of the event-loop turn that finished its request (see writer.ts), and hands its text to the journal,
 * the database statement and the spool, so a row is serialized once; {@link batchJsonBytes} makes
 * a statement's parameter from the texts.
 *
 * {@link buildBatch} builds many entries at once (tools, benchmarks, tests) in slices: a row's
 * cost grows with the user message it describes (its shape and hash read every character: about
 * 100 µs for 16 KiB), so after {@link SLICE_MS} of work it yields to the event loop.
 */
import { performance } from 'node:perf_hooks';
import { cleanRow, mayNeedCleaning } from './clean-row';
import type { RequestRecord } from '../surfaces/request-record';
import { toApiLogRow, type ApiLogRow, type RowOptions } from './row';

/** Synchronous work, in milliseconds, after which batch building yields to the event loop. */
export const SLICE_MS = 1;

/** Rows as their JSON texts: what a statement and a spool segment carry. */
export interface RowTexts {
  /** One row's JSON text each. */
  readonly texts: readonly string[];
}

export interface RowBatch extends RowTexts {
  readonly rows: readonly ApiLogRow[];
  /** `JSON.stringify(rows[i])` for each row. */
  readonly texts: readonly string[];
  /** Rows built from entries whose text needed the shared text rule's replacement (see clean-row.ts). */
  readonly cleaned?: number;
}

/** A row and its JSON text. */
export interface BuiltRow {
  row: ApiLogRow;
  text: string;
  /** Some string of the row held a NUL or an unpaired surrogate, now U+FFFD. */
  cleaned: boolean;
}

/**
 * The row of an entry and its JSON text, every string of it under the shared text rule: a text
 * without a `\u` escape is clean as it is (clean-row.ts); otherwise the row is cleaned and
 * serialized again. PostgreSQL then never sees a NUL or an unpaired surrogate from a live row.
 */
export function buildRow(entry: RequestRecord, options: RowOptions = {}): BuiltRow {
  const row = toApiLogRow(entry, undefined, options);
  const text = JSON.stringify(row);
  if (!mayNeedCleaning(text)) return { row, text, cleaned: false };
  const clean = cleanRow(row);
  return clean === row ? { row, text, cleaned: false } : { row: clean, text: JSON.stringify(clean), cleaned: true };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function sliced<T>(items: readonly T[], build: (item: T) => BuiltRow): Promise<RowBatch> {
  const rows: ApiLogRow[] = [];
  const texts: string[] = [];
  let cleaned = 0;
  let sliceStart = performance.now();
  for (let i = 0; i < items.length; i += 1) {
    const built = build(items[i]!);
    rows.push(built.row);
    texts.push(built.text);
    if (built.cleaned) cleaned += 1;
    if (i + 1 < items.length && performance.now() - sliceStart >= SLICE_MS) {
      await turn();
      sliceStart = performance.now();
    }
  }
  return { rows, texts, cleaned };
}

/** Rows (and their texts) for queued entries, each built by {@link buildRow}. */
export function buildBatch(entries: readonly RequestRecord[]): Promise<RowBatch> {
  return sliced(entries, buildRow);
}

/** Texts for rows already built (rows replayed from the spool), serialized as they are. */
export function serializeRows(rows: readonly ApiLogRow[]): Promise<RowBatch> {
  return sliced(rows, (row) => ({ row, text: JSON.stringify(row), cleaned: false }));
}

const OPEN = 0x5b; // [
const COMMA = 0x2c;
const CLOSE = 0x5d; // ]

/**
 * The batch as one JSON array in UTF-8: the insert statement's parameter, which the PostgreSQL
 * client sends as it is (a binary `json` parameter, whose wire form is its text). The rows' texts
 * are encoded straight into one buffer: a joined string would be flattened, measured and encoded
 * again by the client, about 2.5 µs a row for a 700-byte row against 0.4 µs this way
 * (docs/request-log.md).
 */
export function batchJsonBytes(batch: RowTexts): Buffer {
  const { texts } = batch;
  let length = 2 + Math.max(0, texts.length - 1);
  for (const text of texts) length += Buffer.byteLength(text);
  const out = Buffer.allocUnsafe(length);
  out[0] = OPEN;
  let at = 1;
  for (let i = 0; i < texts.length; i += 1) {
    if (i > 0) out[at++] = COMMA;
    at += out.write(texts[i]!, at, 'utf8');
  }
  out[at] = CLOSE;
  return out;
}
