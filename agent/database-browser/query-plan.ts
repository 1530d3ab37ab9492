/**
 * A database browser query (docs/agent-admin.md "Database browser"): the body's
 * schema and its plan, the one SELECT it runs. Pure: nothing here touches the database.
 *
 * Safety rests on two rules, both enforced here and nowhere else:
 * - every identifier (table, column, sort column) is looked up in the visible schema and every
 *   operator in a fixed list; only names found there, which are plain `[a-z_][a-z0-9_]*`, are
 *   written into the SQL, double-quoted;
 * - every value (filter values, the cell cap, limit, offset) is a bound parameter (`?`): no text
 *   from the request is ever concatenated into the statement.
 * Anything else is a 400 naming the field, before any SQL runs.
 */
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import { VISIBLE_SCHEMA, visibleColumn, type ColumnKind, type VisibleTable } from './visible-schema';

/** The bounds of a query and of its answer (docs/agent-admin.md "Database browser"). */
export const QUERY_LIMITS = {
  defaultLimit: 50,
  maxLimit: 200,
  maxOffset: 100_000,
  maxFilters: 16,
  maxColumns: 64,
  maxNameChars: 63,
  maxValueChars: 1000,
  /** Characters kept of a text, JSON or array cell; a longer cell is cut and listed in `truncated`. */
  maxCellChars: 4000,
  /** Bytes of the rows as JSON beyond which a page stops early (`has_more` and `next_offset` say where to go on). */
  maxPageBytes: 1024 * 1024,
} as const;

export const FILTER_OPERATORS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'contains', 'is_null', 'not_null'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

const COMPARISONS: readonly FilterOperator[] = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'is_null', 'not_null'];
const EQUALITY: readonly FilterOperator[] = ['eq', 'ne', 'is_null', 'not_null'];
const SEARCH: readonly FilterOperator[] = ['contains', 'is_null', 'not_null'];

/** The operators each kind of column accepts. */
export const OPERATORS_BY_KIND: Readonly<Record<ColumnKind, readonly FilterOperator[]>> = {
  text: [...COMPARISONS, 'contains'],
  integer: COMPARISONS,
  number: COMPARISONS,
  timestamp: COMPARISONS,
  date: COMPARISONS,
  boolean: EQUALITY,
  uuid: EQUALITY,
  json: SEARCH,
  text_array: SEARCH,
};

const COMPARISON_SQL: Readonly<Partial<Record<FilterOperator, string>>> = { eq: '=', ne: 'is distinct from', lt: '<', lte: '<=', gt: '>', gte: '>=' };

const LIMIT_RULE = `must be an integer from 1 to ${QUERY_LIMITS.maxLimit}`;
const OFFSET_RULE = `must be an integer from 0 to ${QUERY_LIMITS.maxOffset}`;
const name = z.string().max(QUERY_LIMITS.maxNameChars);
const filterValue = z.union([z.string().max(QUERY_LIMITS.maxValueChars), z.number(), z.boolean()]);

/** The body of `POST /admin/agent/database/query`; names are checked against the visible schema by {@link planQuery}. */
export const browserQuerySchema = z.object({
  table: name,
  columns: z.array(name).min(1).max(QUERY_LIMITS.maxColumns).optional(),
  filters: z.array(z.object({ column: name, op: name, value: filterValue.optional() }).strict()).max(QUERY_LIMITS.maxFilters).default([]),
  sort: z.object({ column: name, direction: z.enum(['asc', 'desc']).default('asc') }).strict().optional(),
  limit: z.number().int(LIMIT_RULE).min(1, LIMIT_RULE).max(QUERY_LIMITS.maxLimit, LIMIT_RULE).default(QUERY_LIMITS.defaultLimit),
  offset: z.number().int(OFFSET_RULE).min(0, OFFSET_RULE).max(QUERY_LIMITS.maxOffset, OFFSET_RULE).default(0),
}).strict();
export type BrowserQuery = z.infer<typeof browserQuerySchema>;

export interface PlannedColumn {
  name: string;
  kind: ColumnKind;
  /** Selected cut to {@link QUERY_LIMITS.maxCellChars} with its full length beside it. */
  capped: boolean;
}

export interface QueryPlan {
  table: string;
  columns: PlannedColumn[];
  sql: string;
  bindings: Array<string | number | boolean>;
  limit: number;
  offset: number;
  /** What the audit row records: the query as asked, with defaults applied. */
  summary: Record<string, unknown>;
}

function invalid(field: string, problem: string): AppError {
  return new AppError('invalid_request', `Invalid field '${field}': ${problem}`, { param: field });
}

/** A visible name, double-quoted. Names come from the allowlist only; the check guards against a bad entry. */
function ident(identifier: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(identifier)) throw new AppError('internal', `the visible schema holds a name that is not a plain identifier: ${identifier}`);
  return `"${identifier}"`;
}

/** The column as text: what `contains` searches and what a capped cell shows. */
function textOf(column: PlannedColumn): string {
  if (column.kind === 'json') return `${ident(column.name)}::text`;
  if (column.kind === 'text_array') return `to_jsonb(${ident(column.name)})::text`;
  return ident(column.name);
}

function resolveTable(table: string): VisibleTable {
  const found = VISIBLE_SCHEMA.get(table);
  if (!found) throw invalid('table', 'not a visible table (GET /admin/agent/database/tables lists them)');
  return found;
}

function resolveColumn(table: VisibleTable, column: string, field: string): PlannedColumn {
  const kind = visibleColumn(table, column);
  if (!kind) throw invalid(field, 'not a visible column of the table');
  return { name: column, kind, capped: kind === 'text' || kind === 'json' || kind === 'text_array' };
}

function resolveColumns(table: VisibleTable, names: readonly string[] | undefined): PlannedColumn[] {
  if (!names) return Object.keys(table.columns).map((column) => resolveColumn(table, column, 'columns'));
  const seen = new Set<string>();
  return names.map((column, i) => {
    const resolved = resolveColumn(table, column, `columns.${i}`);
    if (seen.has(column)) throw invalid(`columns.${i}`, 'a column is named twice');
    seen.add(column);
    return resolved;
  });
}

const INTEGER = /^-?\d{1,18}$/;
const NUMBER = /^-?\d{1,30}(\.\d{1,30})?([eE][-+]?\d{1,3})?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const EXPECTED: Readonly<Record<ColumnKind, string>> = {
  text: 'a string',
  integer: 'an integer (a number, or a string of up to 18 digits)',
  number: 'a number (or a decimal string)',
  boolean: 'true or false',
  timestamp: 'an ISO 8601 date or time (2026-11-25 or 2026-11-25T10:00:00Z)',
  date: 'a date (YYYY-MM-DD)',
  uuid: 'a UUID',
  json: 'a string',
  text_array: 'a string',
};

/** The value of a comparison on a column of `kind`, unchanged when it fits, else a 400 naming `field`. */
function comparedValue(kind: ColumnKind, value: string | number | boolean, field: string): string | number | boolean {
  const fits =
    (kind === 'text' && typeof value === 'string') ||
    (kind === 'integer' && ((typeof value === 'number' && Number.isSafeInteger(value)) || (typeof value === 'string' && INTEGER.test(value)))) ||
    (kind === 'number' && (typeof value === 'number' || (typeof value === 'string' && NUMBER.test(value)))) ||
    (kind === 'boolean' && typeof value === 'boolean') ||
    (kind === 'timestamp' && typeof value === 'string' && TIMESTAMP.test(value) && Number.isFinite(Date.parse(value))) ||
    (kind === 'date' && typeof value === 'string' && DATE.test(value) && Number.isFinite(Date.parse(value))) ||
    (kind === 'uuid' && typeof value === 'string' && UUID.test(value));
  if (!fits) throw invalid(field, `expected ${EXPECTED[kind]} for this column`);
  return value;
}

type Filter = BrowserQuery['filters'][number];

/** One filter as SQL, its value pushed onto `bindings`. */
function condition(table: VisibleTable, filter: Filter, i: number, bindings: Array<string | number | boolean>): string {
  const column = resolveColumn(table, filter.column, `filters.${i}.column`);
  const op = FILTER_OPERATORS.find((known) => known === filter.op);
  if (!op) throw invalid(`filters.${i}.op`, `not an operator (one of ${FILTER_OPERATORS.join(', ')})`);
  if (!OPERATORS_BY_KIND[column.kind].includes(op)) {
    throw invalid(`filters.${i}.op`, `'${op}' does not apply to ${column.kind} columns (${OPERATORS_BY_KIND[column.kind].join(', ')})`);
  }
  const field = `filters.${i}.value`;
  if (op === 'is_null' || op === 'not_null') {
    if (filter.value !== undefined) throw invalid(field, `'${op}' takes no value`);
    return `${ident(column.name)} is ${op === 'is_null' ? '' : 'not '}null`;
  }
  if (filter.value === undefined) throw invalid(field, `'${op}' needs a value`);
  if (op === 'contains') {
    if (typeof filter.value !== 'string' || filter.value.length === 0) throw invalid(field, "'contains' needs a non-empty string");
    bindings.push(filter.value);
    // A literal substring: strpos has no wildcards, so %, _ and \ in the value match themselves.
    return `strpos(lower(${textOf(column)}), lower(cast(? as text))) > 0`;
  }
  bindings.push(comparedValue(column.kind, filter.value, field));
  return `${ident(column.name)} ${COMPARISON_SQL[op]!} ?`;
}

/** ORDER BY: the sort column, then the primary key (same direction) so pages are stable. */
function ordering(table: VisibleTable, sort: BrowserQuery['sort']): string {
  const direction = sort?.direction === 'desc' ? 'desc' : 'asc';
  const first = sort ? [resolveColumn(table, sort.column, 'sort.column').name] : [];
  const keys = [...first, ...table.key.filter((key) => !first.includes(key))];
  return keys.map((key) => `${ident(key)} ${direction}`).join(', ');
}

/**
 * The plan of a validated body: every name resolved against the visible schema (400 naming the
 * field otherwise), the SELECT with its bound parameters. It asks for `limit + 1` rows to learn
 * whether more follow.
 */
export function planQuery(query: BrowserQuery): QueryPlan {
  const table = resolveTable(query.table);
  const columns = resolveColumns(table, query.columns);
  const selectBindings: number[] = [];
  const selected = columns.map((column, i) => {
    if (column.capped) {
      selectBindings.push(QUERY_LIMITS.maxCellChars);
      return `left(${textOf(column)}, ?) as "c${i}", length(${textOf(column)}) as "l${i}"`;
    }
    return column.kind === 'date' ? `${ident(column.name)}::text as "c${i}"` : `${ident(column.name)} as "c${i}"`;
  });
  const whereBindings: Array<string | number | boolean> = [];
  const conditions = query.filters.map((filter, i) => condition(table, filter, i, whereBindings));
  const order = ordering(table, query.sort);
  const sql = [
    `select ${selected.join(', ')}`,
    `from "public".${ident(query.table)}`,
    conditions.length > 0 ? `where ${conditions.join(' and ')}` : '',
    `order by ${order}`,
    'limit ? offset ?',
  ].filter(Boolean).join(' ');
  return {
    table: query.table,
    columns,
    sql,
    bindings: [...selectBindings, ...whereBindings, query.limit + 1, query.offset],
    limit: query.limit,
    offset: query.offset,
    summary: {
      table: query.table,
      columns: query.columns ?? 'all',
      filters: query.filters,
      sort: query.sort ?? null,
      limit: query.limit,
      offset: query.offset,
    },
  };
}

/** The body of `GET /admin/agent/database/tables`: every visible table and column, what each accepts, and the bounds. */
export function visibleSchemaView(statementTimeoutMs: number): Record<string, unknown> {
  const tables = [...VISIBLE_SCHEMA].map(([table, visible]) => ({
    name: table,
    primary_key: visible.key,
    columns: Object.entries(visible.columns).map(([column, kind]) => ({ name: column, type: kind, operators: OPERATORS_BY_KIND[kind] })),
  }));
  return {
    tables,
    operators: FILTER_OPERATORS,
    limits: {
      default_limit: QUERY_LIMITS.defaultLimit,
      max_limit: QUERY_LIMITS.maxLimit,
      max_offset: QUERY_LIMITS.maxOffset,
      max_filters: QUERY_LIMITS.maxFilters,
      max_value_chars: QUERY_LIMITS.maxValueChars,
      max_cell_chars: QUERY_LIMITS.maxCellChars,
      max_page_bytes: QUERY_LIMITS.maxPageBytes,
      statement_timeout_ms: statementTimeoutMs,
    },
  };
}
