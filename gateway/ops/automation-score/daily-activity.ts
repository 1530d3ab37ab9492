/**
 * `daily_activity_shape` (docs/automation-score.md): when in the UTC day a user's requests come
 * and how regularly. Four parts, fused over those meeting their floors: hour coverage, hour
 * entropy and the nightly rest gap (each needs N >= 10), and inter-arrival regularity (needs at
 * least 3 gaps with a positive median).
 */
import type { UserAggregates } from './aggregates';
import { clamp01, fuseParts, part, relativeSpread, type Part, type Signal } from './signals';

/** Distinct active hours / 24. */
export function hourCoverage(hours: readonly number[]): number {
  return hours.filter((n) => n > 0).length / 24;
}

/** Shannon entropy (bits) of the requests' distribution over the 24 hours, divided by log2(24). */
export function normalizedHourEntropy(hours: readonly number[]): number {
  const total = hours.reduce((s, n) => s + n, 0);
  if (total === 0) return 0;
  let bits = 0;
  for (const n of hours) {
    if (n === 0) continue;
    const p = n / total;
    bits -= p * Math.log2(p);
  }
  return bits / Math.log2(24);
}

/**
 * The longest run of consecutive inactive clock hours, wrapping around midnight (hours 22, 23, 0,
 * 1 idle is a run of 4). 24 when no hour is active.
 */
export function maxQuietGapHours(hours: readonly number[]): number {
  if (hours.every((n) => n === 0)) return 24;
  let best = 0;
  let run = 0;
  // Two laps of the clock so a run through midnight is counted whole; a run never exceeds 23.
  for (let i = 0; i < 48; i += 1) {
    run = hours[i % 24]! === 0 ? run + 1 : 0;
    if (run > best) best = run;
  }
  return Math.min(best, 23);
}

export function dailyActivityShape(a: UserAggregates): Signal {
  const enough = a.n >= 10;
  const coverage = hourCoverage(a.hours);
  const hNorm = normalizedHourEntropy(a.hours);
  const quiet = maxQuietGapHours(a.hours);
  const gapRcv = relativeSpread(a.gaps);
  const parts: Record<string, Part> = {
    hour_coverage: part(0.2, enough, () => clamp01((coverage - 0.5) / 0.5), { active_hours: Math.round(coverage * 24), coverage }),
    hour_entropy: part(0.2, enough, () => clamp01((hNorm - 0.5) / (0.92 - 0.5)), { h_norm: hNorm }),
    rest_gap: part(0.3, enough, () => clamp01(1 - quiet / 6), { max_quiet_gap_hours: quiet }),
    interarrival_regularity: part(0.3, a.nGaps >= 3 && gapRcv !== undefined, () => clamp01(1 - gapRcv! / 1.0),
      { gaps: a.nGaps, gap_seconds_quartiles: a.gaps, gap_rcv: gapRcv ?? null }),
  };
  return fuseParts(parts, { n_requests: a.n, hours_utc: a.hours });
}

