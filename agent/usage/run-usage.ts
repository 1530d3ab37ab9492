/**
 * An owner's run usage for the settings usage page (run cost, tokens and turns by day and
 * model over windows of 7 or 30 UTC days; docs/agent-api.md "Run usage"): per UTC
 * day and model, the turns started, and the inference the runs bought through the gateway.
 *
 * Sources, both in the one PostgreSQL database the gateway and the control plane share:
 * - turns: `agent_turns` of the owner's chats by the UTC day of `started_at` (the latest start of
 *   the turn; a turn that never started is not counted), under the chat's model (`agent_jobs.model`);
 * - requests, tokens and cost: the gateway's request log (`api_logs`, docs/request-log.md), whose
 *   rows for grant callers carry `metadata.grant_id`. The rows counted are the owner's
 *   (`user_id`) whose grant (`agent_grants`) is bound to a chat (`job_id`: turn grants and the
 *   chat's title grant; prompt rewrites belong to no run), by the UTC day of `created_at` (when the
 *   response ended), under the grant's model. `prompt_tokens` → input, `completion_tokens` →
 *   output, `cost_usd` as the gateway priced it (a request it could not price adds no cost).
 *
 * Nothing here names a host, container, image or generation. Every day of the window is present
 * (zeros when nothing ran); the window ends today (UTC, by the database clock) like the other usage
 * routes' (usage-window.ts).
 */
import type { Db } from '../../lib/db';
import type { UsageWindow } from './usage-window';

/** Usage counts of one day, one model, or the whole window. */
export interface UsageCounts {
  turns: number;
  /** Inference requests the runs made through the gateway (failed ones included). */
  requests: number;
  input_tokens: number;
  output_tokens: number;
  /** USD, as priced by the gateway (docs/pricing.md); 9 decimals at most. */
  cost_usd: number;
}

export interface ModelUsage extends UsageCounts { model: string }

export interface DayUsage extends UsageCounts {
  /** UTC day `YYYY-MM-DD`. */
  day: string;
  /** The day's models, by name; empty when nothing ran. */
  models: ModelUsage[];
}

export interface RunUsage {
  days: UsageWindow;
  /** First and last UTC day of the window (inclusive; the last is today). */
  from: string;
  to: string;
  /** One entry per UTC day, oldest first. */
  daily: DayUsage[];
  /** The window's totals per model, by name. */
  models: ModelUsage[];
  totals: UsageCounts;
}

const DAY_MS = 86_400_000;

interface Cell { turns: number; requests: number; inputTokens: number; outputTokens: number; costNanos: number }

const emptyCell = (): Cell => ({ turns: 0, requests: 0, inputTokens: 0, outputTokens: 0, costNanos: 0 });

function add(into: Cell, from: Cell): void {
  into.turns += from.turns;
  into.requests += from.requests;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  into.costNanos += from.costNanos;
}

function counts(cell: Cell): UsageCounts {
  return { turns: cell.turns, requests: cell.requests, input_tokens: cell.inputTokens, output_tokens: cell.outputTokens, cost_usd: cell.costNanos / 1e9 };
}

function byModel(cells: Map<string, Cell>): ModelUsage[] {
  return [...cells.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([model, cell]) => ({ model, ...counts(cell) }));
}

/** The owner's usage over the `days` UTC days ending today (UTC, by the database clock). */
export async function runUsage(db: Db, input: { ownerId: number; days: UsageWindow }): Promise<RunUsage> {
  const clock = await db.raw<{ rows: Array<{ today: string }> }>(`select to_char((now() at time zone 'utc')::date, 'YYYY-MM-DD') as today`);
  const today = Date.parse(`${clock.rows[0]!.today}T00:00:00Z`);
  const from = new Date(today - (input.days - 1) * DAY_MS);
  const until = new Date(today + DAY_MS);
  const dates = Array.from({ length: input.days }, (_, i) => new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10));

  const [turns, inference] = await Promise.all([
    db('agent_turns as t').join('agent_jobs as j', 'j.job_id', 't.job_id')
      .where('j.owner_id', input.ownerId).where('t.started_at', '>=', from).where('t.started_at', '<', until)
      .groupByRaw('1, 2')
      .select<Array<{ day: string; model: string; turns: string }>>(
        db.raw(`to_char(t.started_at at time zone 'UTC', 'YYYY-MM-DD') as day`), 'j.model', db.raw('count(*) as turns')),
    // (user_id, created_at) index on api_logs; the grant by its primary key.
    db('api_logs as l').join('agent_grants as g', 'g.grant_id', db.raw(`l.metadata->>'grant_id'`))
      .where('l.user_id', input.ownerId).where('l.created_at', '>=', from).where('l.created_at', '<', until)
      .whereRaw('g.user_id = l.user_id').whereNotNull('g.job_id')
      .groupByRaw('1, 2')
      .select<Array<{ day: string; model: string; requests: string; input_tokens: string; output_tokens: string; cost_nanos: string }>>(
        db.raw(`to_char(l.created_at at time zone 'UTC', 'YYYY-MM-DD') as day`), 'g.model', db.raw('count(*) as requests'),
        db.raw('coalesce(sum(l.prompt_tokens), 0) as input_tokens'), db.raw('coalesce(sum(l.completion_tokens), 0) as output_tokens'),
        db.raw('coalesce(round(sum(l.cost_usd) * 1000000000), 0)::bigint as cost_nanos')),
  ]);

  const cells = new Map<string, Map<string, Cell>>(dates.map((d) => [d, new Map()]));
  const cell = (day: string, model: string): Cell => {
    const models = cells.get(day)!;
    let found = models.get(model);
    if (!found) models.set(model, (found = emptyCell()));
    return found;
  };
  for (const r of turns) if (cells.has(r.day)) cell(r.day, r.model).turns += Number(r.turns);
  for (const r of inference) {
    if (!cells.has(r.day)) continue;
    add(cell(r.day, r.model), { turns: 0, requests: Number(r.requests), inputTokens: Number(r.input_tokens), outputTokens: Number(r.output_tokens), costNanos: Number(r.cost_nanos) });
  }

  const modelTotals = new Map<string, Cell>();
  const total = emptyCell();
  const daily = dates.map((day): DayUsage => {
    const dayTotal = emptyCell();
    for (const [model, c] of cells.get(day)!) {
      add(dayTotal, c);
      let m = modelTotals.get(model);
      if (!m) modelTotals.set(model, (m = emptyCell()));
      add(m, c);
    }
    add(total, dayTotal);
    return { day, ...counts(dayTotal), models: byModel(cells.get(day)!) };
  });
  return { days: input.days, from: dates[0]!, to: dates[dates.length - 1]!, daily, models: byModel(modelTotals), totals: counts(total) };
}
