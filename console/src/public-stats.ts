/**
 * The public stats page's data (docs/public-stats.md): `GET /public-stats`, read without a session.
 * A 404 is an answer, not an error: the deployment does not publish stats, or the daily job has not
 * run yet (the server's message says which). Pure apart from `fetch`, so it is unit-tested.
 */

/** One item of the snapshot: usage of a week, model, surface or writing system. */
export interface StatsItem {
  requests: number;
  accounts: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** The parts of a snapshot the page shows. */
export interface PublicStats {
  generated_at: string;
  window: { weeks: number; start: string; end: string };
  min_accounts: number;
  totals: StatsItem | null;
  accounts: { registered: number | null; new_in_window: number | null };
  weeks: Array<{ week_start: string; withheld: boolean } & Partial<StatsItem>>;
  models: { items: Array<StatsItem & { model: string }>; withheld: number };
  surfaces: { items: Array<StatsItem & { surface: string }>; withheld: number };
  languages?: { items: Array<StatsItem & { script: string }>; withheld: number };
}

export type StatsState =
  | { kind: 'published'; stats: PublicStats }
  | { kind: 'unpublished'; message: string }
  | { kind: 'error'; message: string };

/** Reads the newest snapshot. */
export async function loadPublicStats(fetcher: typeof fetch = fetch): Promise<StatsState> {
  let res: Response;
  try {
    res = await fetcher('/public-stats', { headers: { accept: 'application/json' } });
  } catch (err) {
    return { kind: 'error', message: `The server did not answer (${err instanceof Error ? err.message : String(err)})` };
  }
  const body = (await res.json().catch(() => undefined)) as { error?: { message?: string } } | PublicStats | undefined;
  if (res.status === 404) return { kind: 'unpublished', message: (body as { error?: { message?: string } } | undefined)?.error?.message ?? 'Public stats are not published here' };
  if (res.status !== 200 || !body || !('weeks' in body) || !Array.isArray(body.weeks)) {
    return { kind: 'error', message: `Public stats answered ${res.status}: ${(body as { error?: { message?: string } } | undefined)?.error?.message ?? 'not a snapshot'}` };
  }
  return { kind: 'published', stats: body };
}

/** A count for people: `12,345`, or `withheld` for a figure about fewer than the threshold's accounts. */
export function figure(value: number | null | undefined): string {
  return value === null || value === undefined ? 'withheld' : value.toLocaleString('en-US');
}
