/**
 * The automation score's per-user aggregates, computed in PostgreSQL (docs/automation-score.md):
 * one statement for one user, one for a page of users. A user's rows of the window are read along the
 * `(user_id, created_at)` index: counts, quartiles by
 * `percentile_cont` (linear interpolation), the 24-bucket UTC hour histogram, inter-arrival gaps
 * by `lag()` over the user's rows in time order, and the requests per distinct `User-Agent`
 * (classified in TypeScript: a user has few distinct strings).
 */
import type { Db } from '../../../lib/db';
import type { Quartiles, UserAggregates } from './aggregates';

const QUARTILES = 'array[0.25, 0.5, 0.75]';
const HOURS = Array.from({ length: 24 }, (_, h) => `count(*) filter (where hour = ${h})`).join(', ');

/**
 * The statement over the window's rows that `rowFilter` selects (bindings: `since` and the
 * filter's, twice; then the suffix's). The rows are read twice along the `(user_id, created_at)` index (once in time order
 * for the gaps and every other aggregate, once grouped by user agent) rather than materialized
 * once and sorted: index order is the order the window function needs.
 */
function aggregatesSql(rowFilter: string, prefix = '', suffix = ''): string {
  const rows = `api_logs where user_id is not null and created_at >= ? and ${rowFilter}`;
  return `
    with ${prefix}
    timed as (
      select user_id, num_user_turns, num_tool_calls, prompt_tokens, metadata->>'agent' as agent,
             user_message_chars, user_message_entropy, user_message_hash,
             extract(hour from created_at at time zone 'UTC')::int as hour,
             extract(epoch from created_at - lag(created_at) over (partition by user_id order by created_at))::float8 as gap
      from ${rows}
    ),
    per_user as (
      select user_id, count(*)::int as n,
             count(num_user_turns)::int as n_chat,
             count(*) filter (where num_user_turns <= 1)::int as one_shot,
             percentile_cont(0.9) within group (order by num_user_turns) as turns_p90,
             count(*) filter (where num_user_turns is not null and num_tool_calls > 0)::int as with_tool_calls,
             coalesce(sum(num_tool_calls), 0)::float8 as tool_calls,
             count(*) filter (where prompt_tokens > 0)::int as n_sized,
             percentile_cont(${QUARTILES}) within group (order by prompt_tokens) filter (where prompt_tokens > 0) as prompt_tokens,
             count(agent)::int as with_agent,
             array[${HOURS}]::int[] as hours,
             count(gap)::int as n_gaps,
             percentile_cont(${QUARTILES}) within group (order by gap) as gaps,
             count(user_message_chars)::int as n_message_sized,
             percentile_cont(${QUARTILES}) within group (order by user_message_chars) as message_chars,
             count(user_message_entropy) filter (where user_message_chars > 0)::int as n_message_entropy,
             avg(user_message_entropy) filter (where user_message_chars > 0)::float8 as mean_entropy,
             count(user_message_hash)::int as n_hashed,
             count(distinct user_message_hash)::int as distinct_hashes
      from timed group by user_id
    ),
    agents as (
      select user_id, jsonb_object_agg(user_agent, requests) as user_agents
      from (select user_id, coalesce(metadata->>'user_agent', '') as user_agent, count(*)::int as requests from ${rows} group by 1, 2) per_agent
      group by user_id
    )
    select p.*, a.user_agents from per_user p join agents a using (user_id) ${suffix} order by p.user_id`;
}

interface AggregateRow {
  user_id: string;
  n: number;
  n_chat: number;
  one_shot: number;
  turns_p90: number | null;
  with_tool_calls: number;
  tool_calls: number;
  n_sized: number;
  prompt_tokens: number[] | null;
  with_agent: number;
  hours: number[];
  n_gaps: number;
  gaps: number[] | null;
  n_message_sized: number;
  message_chars: number[] | null;
  n_message_entropy: number;
  mean_entropy: number | null;
  n_hashed: number;
  distinct_hashes: number;
  user_agents: Record<string, number>;
}

const quartiles = (q: number[] | null): Quartiles | null => (q ? [q[0]!, q[1]!, q[2]!] : null);

function fromRow(r: AggregateRow): UserAggregates {
  return {
    userId: Number(r.user_id), n: r.n, nChat: r.n_chat, oneShot: r.one_shot, turnsP90: r.turns_p90, withToolCalls: r.with_tool_calls,
    toolCalls: r.tool_calls, nSized: r.n_sized, promptTokens: quartiles(r.prompt_tokens), withAgent: r.with_agent,
    userAgents: r.user_agents, hours: r.hours, nGaps: r.n_gaps, gaps: quartiles(r.gaps), nMessageSized: r.n_message_sized,
    messageChars: quartiles(r.message_chars), nMessageEntropy: r.n_message_entropy, meanEntropy: r.mean_entropy,
    nHashed: r.n_hashed, distinctHashes: r.distinct_hashes,
  };
}

/** The aggregates of one user's rows since `since`; undefined when it has none. */
export async function userAggregates(db: Db, userId: number, since: Date): Promise<UserAggregates | undefined> {
  const result = await db.raw<{ rows: AggregateRow[] }>(aggregatesSql('user_id = ?'), [since, userId, since, userId]);
  const row = result.rows[0];
  return row ? fromRow(row) : undefined;
}

export interface AggregatesPage {
  since: Date;
  /** Users with an id above this one (0: from the start). */
  afterUserId: number;
  limit: number;
  /** Only users with at least this many rows in the window. */
  minRequests: number;
}

/** The aggregates of the next `limit` users (by id) above `afterUserId` with at least `minRequests` rows since `since`. */
export async function pageAggregates(db: Db, page: AggregatesPage): Promise<UserAggregates[]> {
  // The page's users are those of the id range (after, last of the page] with enough rows: the rows
  // are read as an index range, and the few users of the range below min_requests left out at the end.
  const prefix = `page as (
      select user_id from api_logs
      where user_id is not null and created_at >= ? and user_id > ?
      group by user_id having count(*) >= ? order by user_id limit ?
    ),
    page_end as (select max(user_id) as last from page),`;
  const range = 'user_id > ? and user_id <= (select last from page_end)';
  const sql = aggregatesSql(range, prefix, 'where p.n >= ?');
  const { since, afterUserId: after, minRequests: min, limit } = page;
  const result = await db.raw<{ rows: AggregateRow[] }>(sql, [since, after, min, limit, since, after, since, after, min]);
  return result.rows.map(fromRow);
}
