/**
 * Per-day container running time (a gap between readings counts at most 120 s; usage
 * page windows in UTC days; docs/sandboxes.md "Reconciler"). Each host report that sees a group's
 * container running, after a previous report that also saw it running, adds the time between the
 * two readings, but at most {@link USAGE_GAP_CAP_SECONDS}: a host that was silent for ten minutes
 * does not claim ten minutes it never observed. The counted part is the end of the gap (the
 * seconds just before the current reading), split at each UTC midnight it crosses. Pure.
 */

/** The longest gap between two readings that counts in full. */
export const USAGE_GAP_CAP_SECONDS = 120;

const DAY_MS = 86_400_000;

export interface DayShare {
  /** UTC day, `YYYY-MM-DD`. */
  day: string;
  seconds: number;
}

/** `YYYY-MM-DD` of `ms` (epoch milliseconds) in UTC. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * The running seconds to add per UTC day for two consecutive readings of a running container at
 * `previousAt` and `now`: min(gap, `capSeconds`), ending at `now`, split at UTC midnights. Empty
 * when `now` is not after `previousAt`.
 */
export function runningSecondsByDay(previousAt: Date, now: Date, capSeconds = USAGE_GAP_CAP_SECONDS): DayShare[] {
  const end = now.getTime();
  const start = Math.max(previousAt.getTime(), end - capSeconds * 1000);
  if (!(end > start)) return [];
  const shares: DayShare[] = [];
  let from = start;
  while (from < end) {
    const midnight = (Math.floor(from / DAY_MS) + 1) * DAY_MS;
    const to = Math.min(end, midnight);
    shares.push({ day: utcDay(from), seconds: (to - from) / 1000 });
    from = to;
  }
  return shares;
}
