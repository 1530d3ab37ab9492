/**
 * The PostgreSQL {@link LogSink}: a batch is one statement. The rows travel as one JSON parameter
 * (UTF-8 bytes, `json_populate_recordset`, no bind-parameter limit), are inserted into `api_logs` skipping
 * `log_id`s already stored (a replayed spool segment), and the rows actually inserted increment
 * `provider_hourly_stats` in the same statement, so a replay never counts a request twice.
 * Synthetic probes and requests that reached no route (rejections, unknown models) are not
 * aggregated. Aggregates older than 30 days are purged.
 *
 * A statement PostgreSQL refuses because of a row's data rejects with {@link RowsRefusedError}
 * (the writer splits the batch to find the row); every other failure (connection refused, timeout,
 * server gone) rejects as it came and counts as the database being down.
 */
import type { Db } from '../../lib/db';
import { batchJsonBytes } from './batch';
import { RowsRefusedError, type LogSink } from './writer';
import type { ApiLogRow } from './row';

/** Days `provider_hourly_stats` keeps. */
export const HOURLY_STATS_RETENTION_DAYS = 30;

const COLUMNS: ReadonlyArray<keyof ApiLogRow> = [
  'log_id', 'created_at', 'request_id', 'user_id', 'api_key_id', 'model', 'provider', 'endpoint_id', 'surface', 'status', 'stream',
  'latency_ms', 'first_token_ms', 'prompt_tokens', 'completion_tokens', 'cache_read_tokens', 'num_user_turns', 'num_tool_calls',
  'cost_usd', 'error_code', 'synthetic', 'user_message_chars', 'user_message_entropy', 'user_message_hash', 'user_message_text', 'metadata',
];

const INSERT = `
with inserted as (
  insert into api_logs (${COLUMNS.join(', ')})
  select ${COLUMNS.join(', ')} from json_populate_recordset(null::api_logs, ?::json)
  on conflict (log_id) do nothing
  returning created_at, provider, model, endpoint_id, status, error_code, synthetic,
            prompt_tokens, completion_tokens, cache_read_tokens, cost_usd, latency_ms
)
insert into provider_hourly_stats as s
  (hour, provider, model, endpoint_id, requests, errors, prompt_tokens, completion_tokens, cache_read_tokens, cost_usd, latency_ms_sum)
select date_trunc('hour', created_at), provider, coalesce(model, ''), endpoint_id, count(*),
       count(*) filter (where status >= 400 or error_code is not null),
       coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cache_read_tokens), 0),
       coalesce(sum(cost_usd), 0), coalesce(sum(latency_ms), 0)
from inserted
where endpoint_id is not null and provider is not null and not synthetic
group by 1, 2, 3, 4
on conflict (hour, provider, model, endpoint_id) do update set
  requests = s.requests + excluded.requests,
  errors = s.errors + excluded.errors,
  prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
  completion_tokens = s.completion_tokens + excluded.completion_tokens,
  cache_read_tokens = s.cache_read_tokens + excluded.cache_read_tokens,
  cost_usd = s.cost_usd + excluded.cost_usd,
  latency_ms_sum = s.latency_ms_sum + excluded.latency_ms_sum`;

/** The unique index on the idempotency key: a replayed row conflicts on it by design (`on conflict` absorbs it). */
const IDEMPOTENCY_INDEX = 'api_logs_log_id_unique';

/**
 * The SQLSTATE of an error PostgreSQL raised because of the data of some row of the statement, or
 * undefined for any other failure: class 22 (data exception: `22P05` a `\u0000` in text, `22P02` a
 * lone surrogate escape or bad input syntax, `22003` a number out of range, `22007` a bad
 * timestamp…), class 23 (integrity constraint) except a unique violation of the idempotency key,
 * and `54000` (program limit exceeded: a value too large for an index row).
 */
export function rowDataSqlState(err: unknown): string | undefined {
  const { code, constraint } = (err ?? {}) as { code?: unknown; constraint?: unknown };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (code.startsWith('22') || code === '54000') return code;
  if (code.startsWith('23')) return code === '23505' && constraint === IDEMPOTENCY_INDEX ? undefined : code;
  return undefined;
}

const STATEMENT_END = 'latency_ms_sum = s.latency_ms_sum + excluded.latency_ms_sum - ';

/**
 * PostgreSQL's own message (and detail): knex prefixes the statement with its parameter, here the
 * whole batch, which must not travel into a log line or the quarantine file.
 */
function serverMessage(err: Error & { detail?: unknown }): string {
  const at = err.message.indexOf(STATEMENT_END);
  const message = at === -1 ? err.message.slice(0, 300) : err.message.slice(at + STATEMENT_END.length);
  return typeof err.detail === 'string' && err.detail ? `${message} (${err.detail})` : message;
}

/** Stores request-log batches in `api_logs` and `provider_hourly_stats`. */
export function postgresSink(db: Db): LogSink {
  return {
    write: async (batch) => {
      if (batch.texts.length === 0) return;
      try {
        await db.raw(INSERT, [batchJsonBytes(batch)]);
      } catch (err) {
        const sqlstate = rowDataSqlState(err);
        if (sqlstate === undefined) throw err;
        throw new RowsRefusedError(sqlstate, serverMessage(err as Error & { detail?: unknown }), err);
      }
    },
    purge: async () => {
      await db.raw(`delete from provider_hourly_stats where hour < now() - make_interval(days => ?)`, [HOURLY_STATS_RETENTION_DAYS]);
    },
  };
}
