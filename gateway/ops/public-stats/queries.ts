/**
 * The SQL behind the public stats snapshot (docs/public-stats.md): usage from `api_logs` grouped by
 * week, model, surface and (with stored message text) writing system, and account counts from
 * `users`. A request counts when it succeeded (status below 400) and is not a synthetic probe;
 * its account is its `user_id` (rows without one add requests and tokens, never accounts).
 */
import type { Knex } from 'knex';
import type { Db } from '../../../lib/db';
import type { Named, Usage } from './content';

type Window = { start: Date; end: Date };

interface UsageRow {
  key: string | null;
  requests: string;
  accounts: string;
  prompt_tokens: string;
  completion_tokens: string;
}

const USAGE_COLUMNS = `count(*) as requests, count(distinct user_id) as accounts,
  coalesce(sum(prompt_tokens), 0) as prompt_tokens, coalesce(sum(completion_tokens), 0) as completion_tokens`;

const COUNTED = 'created_at >= ? and created_at < ? and status < 400 and not synthetic';
/** {@link COUNTED} for `api_logs l`. */
const COUNTED_L = 'l.created_at >= ? and l.created_at < ? and l.status < 400 and not l.synthetic';

function usageOf(row: UsageRow): Usage {
  return { requests: Number(row.requests), accounts: Number(row.accounts), prompt_tokens: Number(row.prompt_tokens), completion_tokens: Number(row.completion_tokens) };
}

/** The window's usage as a whole. */
export async function totalUsage(db: Db | Knex.Transaction, window: Window): Promise<Usage> {
  const { rows } = await db.raw<{ rows: UsageRow[] }>(`select null as key, ${USAGE_COLUMNS} from api_logs where ${COUNTED}`, [window.start, window.end]);
  return usageOf(rows[0]!);
}

/** Usage per UTC week, keyed by the week's Monday (`YYYY-MM-DD`). */
export async function weeklyUsage(db: Db | Knex.Transaction, window: Window): Promise<Map<string, Usage>> {
  const { rows } = await db.raw<{ rows: UsageRow[] }>(
    `select to_char(date_trunc('week', created_at at time zone 'UTC'), 'YYYY-MM-DD') as key, ${USAGE_COLUMNS}
     from api_logs where ${COUNTED} group by 1`,
    [window.start, window.end],
  );
  return new Map(rows.map((row) => [row.key!, usageOf(row)]));
}

/** Usage per value of a column (`model`, `surface`); rows where it is null are left out. */
export async function usageBy<K extends 'model' | 'surface'>(db: Db | Knex.Transaction, window: Window, column: K): Promise<Array<Named<K>>> {
  const { rows } = await db.raw<{ rows: UsageRow[] }>(
    `select ?? as key, ${USAGE_COLUMNS} from api_logs where ${COUNTED} and ?? is not null group by 1`,
    [column, window.start, window.end, column],
  );
  return rows.map((row) => ({ [column]: row.key!, ...usageOf(row) }) as Named<K>);
}

/**
 * Writing systems recognised in user messages, each with the characters that belong to it (a
 * PostgreSQL regular-expression class). A message's script is the one with most of its characters;
 * a message with none of them (digits, symbols, emoji only) has no script and is not counted.
 */
export const SCRIPTS: ReadonlyArray<readonly [string, string]> = [
  ['latin', 'A-Za-z\\u00C0-\\u024F\\u1E00-\\u1EFF'],
  ['cyrillic', '\\u0400-\\u04FF'],
  ['greek', '\\u0370-\\u03FF'],
  ['arabic', '\\u0600-\\u06FF\\u0750-\\u077F'],
  ['hebrew', '\\u0590-\\u05FF'],
  ['devanagari', '\\u0900-\\u097F'],
  ['thai', '\\u0E00-\\u0E7F'],
  ['han', '\\u3400-\\u4DBF\\u4E00-\\u9FFF'],
  ['kana', '\\u3040-\\u30FF'],
  ['hangul', '\\u1100-\\u11FF\\uAC00-\\uD7AF'],
];

/** Usage per writing system of the stored user-message text (`user_message_text`). */
export async function usageByScript(db: Db | Knex.Transaction, window: Window): Promise<Array<Named<'script'>>> {
  const values = SCRIPTS.map(() => '(?, ?)').join(', ');
  const bindings = SCRIPTS.flatMap(([script, chars]) => [script, `[^${chars}]`]);
  const { rows } = await db.raw<{ rows: UsageRow[] }>(
    `with scored as (
       select l.user_id, l.prompt_tokens, l.completion_tokens, best.script
       from api_logs l
       cross join lateral (
         select v.script, length(regexp_replace(l.user_message_text, v.other, '', 'g')) as n
         from (values ${values}) as v(script, other)
         order by n desc, v.script limit 1
       ) best
       where ${COUNTED_L}
         and l.user_message_text is not null and best.n > 0
     )
     select script as key, ${USAGE_COLUMNS} from scored group by 1`,
    [...bindings, window.start, window.end],
  );
  return rows.map((row) => ({ script: row.key!, ...usageOf(row) }));
}

/** Accounts that exist now (not deleted), and those created within the window. */
export async function accountCounts(db: Db | Knex.Transaction, window: Window): Promise<{ registered: number; newInWindow: number }> {
  const { rows } = await db.raw<{ rows: Array<{ registered: string; new_in_window: string }> }>(
    `select count(*) as registered, count(*) filter (where created_at >= ? and created_at < ?) as new_in_window
     from users where deleted_at is null`,
    [window.start, window.end],
  );
  return { registered: Number(rows[0]!.registered), newInWindow: Number(rows[0]!.new_in_window) };
}
