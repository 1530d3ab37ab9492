/**
 * `pricing_schedule` (docs/pricing.md): time-dependent pricing, UTC only. Before `effective_at` the base
 * `pricing` applies; from it on, `default` applies outside every window and a window's own
 * `pricing` inside it (each overrides the base field by field). Windows are half-open
 * `[start, end)`; `start`/`end` are either daily UTC clock times `HH:MM` (a window whose end is not
 * after its start wraps past midnight) or one-off ISO-8601 UTC instants. The first listed window
 * containing the instant wins. Parsed and compiled once at registry load (every merge done then),
 * so {@link pricingAt} on the request-log path is a few integer comparisons and no allocation.
 * Format and examples: `docs/pricing.md`.
 */
import { z } from 'zod';
import type { Pricing } from './types';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const PRICE = /^\d+(\.\d+)?$/;
const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;
/** ISO-8601 date-time in UTC: `Z` or a zero offset only (the schedule is UTC-only). */
const UTC_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]00:?00)$/;

const price = z.union([z.string(), z.number()]).transform(String)
  .refine((v) => PRICE.test(v.trim()), 'a price is a non-negative decimal number (USD), e.g. "0.25"');

/** The six priced fields; unknown keys are refused so a typo cannot silently price at base. */
const pricingSchema = z.object({
  prompt: price.optional(),
  completion: price.optional(),
  input_cache_reads: price.optional(),
  input_cache_writes: price.optional(),
  request: price.optional(),
  image: price.optional(),
}).strict();

const utcInstant = z.string().refine((v) => UTC_INSTANT.test(v) && Number.isFinite(Date.parse(v)),
  'must be an ISO-8601 UTC date-time such as "2026-12-01T00:00:00Z" (the schedule is UTC-only; no local offsets)');

const windowSchema = z.object({
  start: z.string(),
  end: z.string(),
  pricing: pricingSchema,
}).strict().superRefine((w, ctx) => {
  const clock = CLOCK.test(w.start) && (CLOCK.test(w.end) || w.end === '24:00');
  const once = UTC_INSTANT.test(w.start) && UTC_INSTANT.test(w.end) && Number.isFinite(Date.parse(w.start)) && Number.isFinite(Date.parse(w.end));
  if (!clock && !once) {
    ctx.addIssue({ code: 'custom', message: 'start and end are both daily UTC times "HH:MM" (end may be "24:00") or both ISO-8601 UTC date-times', path: ['start'] });
  } else if (clock && w.start === w.end) {
    ctx.addIssue({ code: 'custom', message: 'a daily window needs end different from start', path: ['end'] });
  } else if (once && Date.parse(w.end) <= Date.parse(w.start)) {
    ctx.addIssue({ code: 'custom', message: 'a dated window needs end after start', path: ['end'] });
  }
});

/** The `pricing_schedule` entry of a model or route, as written in the models file. */
export const pricingScheduleSchema = z.object({
  effective_at: utcInstant,
  default: pricingSchema.optional(),
  windows: z.array(windowSchema).optional(),
}).strict();

export type RawPricingSchedule = z.infer<typeof pricingScheduleSchema>;

/** One compiled window: daily (milliseconds of the UTC day) or once (epoch milliseconds). */
export interface ScheduleWindow {
  daily: boolean;
  start: number;
  end: number;
  /** Base pricing with the window's fields applied. */
  pricing: Pricing;
}

/** A compiled schedule: every pricing already merged over the base. */
export interface PricingSchedule {
  /** Epoch milliseconds from which the schedule applies. */
  effectiveAt: number;
  /** Base pricing with `default` applied: in force outside every window. */
  outside: Pricing;
  windows: readonly ScheduleWindow[];
}

function clockMs(value: string): number {
  if (value === '24:00') return DAY_MS;
  return (Number(value.slice(0, 2)) * 60 + Number(value.slice(3, 5))) * MINUTE_MS;
}

function merged(base: Pricing | undefined, over: Pricing | undefined): Pricing {
  const out: Pricing = {};
  for (const source of [base, over]) {
    for (const [key, value] of Object.entries(source ?? {})) {
      if (key !== 'schedule' && value !== undefined) (out as Record<string, string>)[key] = value as string;
    }
  }
  return out;
}

/** Compiles a validated schedule against the route's base pricing. */
export function compileSchedule(raw: RawPricingSchedule, base: Pricing | undefined): PricingSchedule {
  return {
    effectiveAt: Date.parse(raw.effective_at),
    outside: merged(base, raw.default),
    windows: (raw.windows ?? []).map((w) => {
      const daily = CLOCK.test(w.start);
      return { daily, start: daily ? clockMs(w.start) : Date.parse(w.start), end: daily ? clockMs(w.end) : Date.parse(w.end), pricing: merged(base, w.pricing) };
    }),
  };
}

function inside(w: ScheduleWindow, at: number): boolean {
  if (!w.daily) return at >= w.start && at < w.end;
  const ms = ((at % DAY_MS) + DAY_MS) % DAY_MS;
  return w.start < w.end ? ms >= w.start && ms < w.end : ms >= w.start || ms < w.end;
}

/**
 * The pricing in force at `at` (epoch milliseconds): the base before `effective_at`, then the
 * first window containing `at`, else the outside (`default`) pricing. Pure; returns a reference.
 */
export function pricingAt(pricing: Pricing | undefined, at: number): Pricing | undefined {
  const schedule = pricing?.schedule;
  if (!schedule || at < schedule.effectiveAt) return pricing;
  for (let i = 0; i < schedule.windows.length; i += 1) {
    const w = schedule.windows[i]!;
    if (inside(w, at)) return w.pricing;
  }
  return schedule.outside;
}
