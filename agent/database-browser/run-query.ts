/**
 * Runs a planned database browser query (query-plan.ts) in the read-only transaction and shapes
 * the page (docs/agent-admin.md "Database browser"): rows as objects keyed by column, long cells
 * cut and listed, the page stopped early past a byte budget, paging by offset.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { QUERY_LIMITS, type QueryPlan } from './query-plan';
import { inReadOnlyTransaction, type ReadOnlyOptions } from './read-only';

export interface TruncatedCell {
  /** Index of the row in `rows`. */
  row: number;
  column: string;
  /** The cell's full length in characters (the page holds its first {@link QUERY_LIMITS.maxCellChars}). */
  length: number;
}

export interface BrowserPage {
  table: string;
  columns: string[];
  rows: Array<Record<string, unknown>>;
  truncated: TruncatedCell[];
  limit: number;
  offset: number;
  has_more: boolean;
  /** The `offset` of the next page when `has_more`, else null. */
  next_offset: number | null;
}

type RawRow = Record<string, unknown>;

/** One row as the client sees it; cut cells are pushed onto `truncated`. */
function shapeRow(plan: QueryPlan, raw: RawRow, index: number, truncated: TruncatedCell[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  plan.columns.forEach((column, i) => {
    const value = raw[`c${i}`];
    if (!column.capped || value === null || value === undefined) {
      row[column.name] = value ?? null;
      return;
    }
    const length = Number(raw[`l${i}`]);
    if (length > QUERY_LIMITS.maxCellChars) {
      row[column.name] = value;
      truncated.push({ row: index, column: column.name, length });
    } else {
      row[column.name] = column.kind === 'text' ? value : (JSON.parse(value as string) as unknown);
    }
  });
  return row;
}

/** The page of `rows` (up to `limit + 1` were read): at most `limit` rows and about {@link QUERY_LIMITS.maxPageBytes}. */
export function shapePage(plan: QueryPlan, rows: readonly RawRow[]): BrowserPage {
  const shaped: Array<Record<string, unknown>> = [];
  const truncated: TruncatedCell[] = [];
  let bytes = 0;
  let cut = false;
  for (const raw of rows.slice(0, plan.limit)) {
    const cellsBefore = truncated.length;
    const row = shapeRow(plan, raw, shaped.length, truncated);
    bytes += Buffer.byteLength(JSON.stringify(row));
    // The first row always fits (its cells are capped); a later one that passes the budget waits for the next page.
    if (shaped.length > 0 && bytes > QUERY_LIMITS.maxPageBytes) {
      truncated.length = cellsBefore;
      cut = true;
      break;
    }
    shaped.push(row);
  }
  const hasMore = cut || rows.length > plan.limit;
  return {
    table: plan.table,
    columns: plan.columns.map((column) => column.name),
    rows: shaped,
    truncated,
    limit: plan.limit,
    offset: plan.offset,
    has_more: hasMore,
    next_offset: hasMore ? plan.offset + shaped.length : null,
  };
}

/**
 * The failures a query can meet that are not the server's fault: the statement timeout (503,
 * nothing disclosed; the query can be narrowed) and a value PostgreSQL cannot read as its
 * column's type (400 naming `filters`, e.g. an integer beyond the column's range).
 */
function queryError(err: unknown, statementTimeoutMs: number): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === '57014') {
    return new AppError('service_unavailable', `The query was cancelled at the statement timeout (${statementTimeoutMs} ms): narrow the filters or lower the limit`, { cause: err });
  }
  if (typeof code === 'string' && code.startsWith('22')) {
    return new AppError('invalid_request', "Invalid field 'filters': a value does not fit its column's type or range", { param: 'filters', cause: err });
  }
  return err;
}

/** Runs `plan` read-only under the statement timeout and shapes its page. */
export async function runBrowserQuery(db: Db, plan: QueryPlan, options: ReadOnlyOptions): Promise<BrowserPage> {
  let rows: RawRow[];
  try {
    rows = await inReadOnlyTransaction(db, options, async (trx) => (await trx.raw<{ rows: RawRow[] }>(plan.sql, plan.bindings)).rows);
  } catch (err) {
    throw queryError(err, options.statementTimeoutMs);
  }
  return shapePage(plan, rows);
}
