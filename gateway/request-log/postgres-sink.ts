/**
 * The PostgreSQL {@link LogSink}: a batch is one statement. The rows travel as one JSON parameter
 * (UTF-8 bytes, `json_populate_recordset`, no bind-parameter limit), are inserted into `api_logs` skipping
 * `log_id`s already stored (a replayed spool segment), and the rows actually inserted increment
 * `provider_hourly_stats` in the same statement, so a replay never counts a request twice.
 * Synthetic probes and requests that reached no route (rejections, unknown models) are not
 * aggregated. Aggregates older than 30 days are purged.
 */
import type { Db } from '../../lib/db';
import { batchJsonBytes } from './batch';
import type { LogSink } from './writer';
import type { ApiLogRow } from './row';

/** Days `provider_hourly_stats` keeps (spec 2.8). */
export const HOURLY_STATS_RETENTION_DAYS = 30;

const COLUMNS: ReadonlyArray<keyof ApiLogRow> = [
  'log_id', 'created_at', 'request_id', 'user_id', 'api_key_id', 'model', 'provider', 'endpoint_id', 'surface', 'status', 'stream',
  'latency_ms', 'first_token_ms', 'prompt_tokens', 'completion_tokens', 'cache_read_tokens', 'num_user_turns', 'num_tool_calls',
  'cost_usd', 'error_code', 'synthetic', 'user_message_chars', 'user_message_entropy', 'user_message_hash', 'metadata',
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

/** Stores request-log batches in `api_logs` and `provider_hourly_stats`. */
export function postgresSink(db: Db): LogSink {
  return {
    write: async (batch) => {
      if (batch.rows.length === 0) return;
      await db.raw(INSERT, [batchJsonBytes(batch)]);
    },
    purge: async () => {
      await db.raw(`delete from provider_hourly_stats where hour < now() - make_interval(days => ?)`, [HOURLY_STATS_RETENTION_DAYS]);
    },
  };
}
