/**
 * Replaceable parts for request-log writer tests: a sink that stores rows by `log_id` like the
 * database and can fail, hang or refuse rows on demand, request records built from their fields,
 * and numbered ones.
 */
import { batchJsonBytes, type RowTexts } from '../../gateway/request-log/batch';
import type { ApiLogRow } from '../../gateway/request-log/row';
import { RequestRecord } from '../../gateway/surfaces/request-record';
import { captureLogs } from './logs';
import { RowsRefusedError, type LogSink } from '../../gateway/request-log/writer';

/**
 * A sink that stores rows by `log_id` (as the database does), can fail or hang on demand, and
 * refuses a whole statement holding a row `refuses` picks (as PostgreSQL refuses a statement
 * for one row's data); after `failAfter` more statements it fails as a database gone down.
 */
export class FakeSink implements LogSink {
  readonly stored = new Map<string, ApiLogRow>();
  readonly batches: number[] = [];
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  refuses: (row: ApiLogRow) => boolean = () => false;
  failAfter = Infinity;
  private hung: Array<() => void> = [];
  /** Batches whose statement JSON did not match their rows. */
  jsonMismatches = 0;
  write(batch: RowTexts): Promise<void> {
    const rows = batch.texts.map((text) => JSON.parse(text) as ApiLogRow);
    this.batches.push(rows.length);
    if (!batchJsonBytes(batch).equals(Buffer.from(JSON.stringify(rows)))) this.jsonMismatches += 1;
    const store = () => {
      for (const row of rows) if (!this.stored.has(row.log_id)) this.stored.set(row.log_id, row);
    };
    if (this.failAfter-- <= 0) this.mode = 'fail';
    if (this.mode === 'fail') return Promise.reject(new Error('connection refused'));
    if (rows.some(this.refuses)) return Promise.reject(new RowsRefusedError('22P05', 'unsupported Unicode escape sequence'));
    if (this.mode === 'hang') return new Promise((resolve) => this.hung.push(() => { store(); resolve(); }));
    store();
    return Promise.resolve();
  }
  purge(): Promise<void> {
    return Promise.resolve();
  }
  /** Lets hung writes complete (as a resumed server would). */
  release(): void {
    this.mode = 'ok';
    for (const done of this.hung.splice(0)) done();
  }
  requestIds(): string[] {
    return [...this.stored.values()].map((r) => r.request_id).sort();
  }
}

/** Any fields of a request record (its id, path and start included), as a test sets them. */
export type RecordFields = { -readonly [K in keyof RequestRecord as K extends 'log' | 'rejected' | 'end' ? never : K]?: RequestRecord[K] };

const quiet = captureLogs('record', 'fatal').log;

/**
 * A finished request's record with `fields` set, as the hot path leaves it after `end`: the
 * request id, path (default the chat path) and start go to the constructor; a surface left
 * undefined is the path's.
 */
export function requestRecord(fields: RecordFields = {}): RequestRecord {
  const { requestId = 'req-1', path = '/v1/chat/completions', client, startedAt = 0, surface, ...rest } = fields;
  const record = new RequestRecord(requestId, quiet, path, client, startedAt);
  if (surface !== undefined) record.surface = surface;
  return Object.assign(record, rest);
}

/** A finished request's record, numbered (`<prefix>0042`). */
export function entry(n: number, prefix = 'r'): RequestRecord {
  return requestRecord({
    at: Date.now(), requestId: `${prefix}${String(n).padStart(4, '0')}`, path: '/v1/chat/completions', status: 200, latencyMs: 1,
    firstTokenMs: undefined, errorCode: undefined, caller: undefined, model: 'm', stream: false, routing: undefined, usage: undefined,
    pricing: undefined, client: undefined, numUserTurns: 1, numToolCalls: 0, lastUserMessage: 'hi', userAgent: undefined,
    sessionId: undefined, synthetic: false, rejection: undefined,
  });
}
