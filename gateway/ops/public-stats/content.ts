/**
 * The public stats snapshot's content (docs/public-stats.md) and the withholding rule: aggregates a
 * deployment may publish, where every figure that describes fewer than
 * {@link MIN_ACCOUNTS} accounts is withheld, so no published number is about one or two people.
 * Pure: the SQL that gathers the figures is in `queries.ts`.
 */

/** Figures describing fewer accounts than this are withheld. */
export const MIN_ACCOUNTS = 3;

/** Default window of the snapshot, in whole UTC weeks. */
export const DEFAULT_WEEKS = 26;

/** The weeks a window may span (the CLI and the Schedule input are checked against it). */
export const MAX_WEEKS = 520;

/** Usage of one group of requests: what every item of the snapshot reports. */
export interface Usage {
  requests: number;
  /** Distinct accounts that sent them (requests without an account do not count). */
  accounts: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** One UTC week (Monday 00:00): its usage, or `withheld: true` without figures. */
export type Week = { week_start: string } & ({ withheld: false } & Usage | { withheld: true });

/** A named item (a model, a surface, a script); items below the threshold are left out. */
export type Named<K extends string> = Record<K, string> & Usage;

/** A list of named items and how many were left out for describing too few accounts. */
export interface Section<K extends string> {
  items: Array<Named<K>>;
  withheld: number;
}

/** The content of one `public_stats_snapshots` row, as `GET /public-stats` serves it. */
export interface PublicStatsContent {
  version: 1;
  generated_at: string;
  /** `[start, end)`: the `weeks` whole UTC weeks before the current one. */
  window: { weeks: number; start: string; end: string };
  min_accounts: number;
  /** The window's usage; null when fewer than {@link MIN_ACCOUNTS} accounts sent it. */
  totals: Usage | null;
  /** Accounts that exist now, and those created within the window; each null when below the threshold. */
  accounts: { registered: number | null; new_in_window: number | null };
  weeks: Week[];
  models: Section<'model'>;
  surfaces: Section<'surface'>;
  /** The writing systems of user messages; present only with `DB_STORE_FULL_CONTENT=true`. */
  languages?: Section<'script'>;
}

/** The window of `weeks` whole UTC weeks ending at the start (Monday 00:00 UTC) of the week holding `now`. */
export function windowOf(now: Date, weeks: number): { start: Date; end: Date } {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const sinceMonday = (now.getUTCDay() + 6) % 7;
  const end = new Date(midnight - sinceMonday * 86_400_000);
  return { start: new Date(end.getTime() - weeks * 7 * 86_400_000), end };
}

/** A count, or null when it is below the threshold. */
export function countOrWithheld(count: number): number | null {
  return count >= MIN_ACCOUNTS ? count : null;
}

/** The usage when enough accounts sent it, else null. */
export function usageOrWithheld(usage: Usage): Usage | null {
  return usage.accounts >= MIN_ACCOUNTS ? usage : null;
}

/** Keeps the items with enough accounts (largest first), and counts the others. */
export function section<K extends string>(items: Array<Named<K>>): Section<K> {
  const kept = items.filter((item) => item.accounts >= MIN_ACCOUNTS).sort((a, b) => b.requests - a.requests);
  return { items: kept, withheld: items.length - kept.length };
}

/**
 * Every week of the window in order, each with its usage when enough accounts were active in it;
 * a week without a row is a week without requests (zero usage, and zero accounts: withheld).
 */
export function weeksOf(window: { start: Date; weeks: number }, rows: ReadonlyMap<string, Usage>): Week[] {
  const weeks: Week[] = [];
  for (let i = 0; i < window.weeks; i += 1) {
    const week_start = new Date(window.start.getTime() + i * 7 * 86_400_000).toISOString().slice(0, 10);
    const usage = rows.get(week_start);
    weeks.push(usage && usage.accounts >= MIN_ACCOUNTS ? { week_start, withheld: false, ...usage } : { week_start, withheld: true });
  }
  return weeks;
}
