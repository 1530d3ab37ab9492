/**
 * The automation score of one user (docs/automation-score.md): the seven signals combined by
 * their weights re-normalized over the available ones, the hard human clamp, shrinkage towards
 * 0.5 by alpha = N / (N + 30), the confidence, the band. Pure: the aggregates come from
 * `aggregates-sql.ts`, the clock from the caller.
 */
import type { UserAggregates } from './aggregates';
import { dailyActivityShape } from './daily-activity';
import {
  agentOpenerOverride, agentShare, clamp01, clientToolPrior, promptSizeDispersion, SIGNAL_WEIGHTS, TOTAL_WEIGHT,
  toolCallHumanTell, turnPattern, userMessageShape, type Part, type Signal, type SignalName,
} from './signals';

export type Band = 'likely_human' | 'mixed_or_uncertain' | 'likely_automated' | 'scripted_batch';

/** Below this many requests a score is flagged `insufficient_data`. */
export const MIN_REQUESTS = 5;

/** The band of a score: lower bounds inclusive, upper exclusive, 1.00 inside `scripted_batch`. */
export function bandOf(score: number): Band {
  if (score < 0.35) return 'likely_human';
  if (score < 0.6) return 'mixed_or_uncertain';
  if (score < 0.8) return 'likely_automated';
  return 'scripted_batch';
}

export interface PartView {
  available: boolean;
  weight: number;
  sub_score: number | null;
  inputs: Record<string, unknown>;
}

export interface SignalView extends PartView {
  /** The weight's share of the available weight (0 when unavailable): what it counted for in `raw`. */
  effective_weight: number;
  parts?: Record<string, PartView>;
}

/** The response of the admin routes and the CLI's `--json`, one user. */
export interface AutomationScore {
  user_id: number;
  score: number;
  band: Band;
  confidence: number;
  insufficient_data: boolean;
  n_requests: number;
  window_days: number;
  computed_at: string;
  /** Weighted mean of the available signals (after the clamp); null when none is available. */
  raw: number | null;
  alpha: number;
  available_weight: number;
  /** The hard human clamp's conditions held: `raw` is capped at 0.5. */
  human_clamp: boolean;
  signals: Record<SignalName, SignalView>;
}

const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

/** Numbers in inputs rounded to 4 decimals for reading (the score uses full precision). */
function roundDeep(value: unknown): unknown {
  if (typeof value === 'number') return round4(value);
  if (Array.isArray(value)) return value.map(roundDeep);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, roundDeep(v)]));
  return value;
}

function partView(p: Part): PartView {
  return { available: p.available, weight: p.weight, sub_score: p.subScore === null ? null : round4(p.subScore), inputs: roundDeep(p.inputs) as Record<string, unknown> };
}

/** All seven signals of `a`. */
export function signalsOf(a: UserAggregates): Record<SignalName, Signal> {
  return {
    turn_pattern: turnPattern(a),
    prompt_size_dispersion: promptSizeDispersion(a),
    user_message_shape: userMessageShape(a),
    client_tool_prior: clientToolPrior(a),
    daily_activity_shape: dailyActivityShape(a),
    tool_call_human_tell: toolCallHumanTell(a),
    agent_opener_override: agentOpenerOverride(a),
  };
}

/** Weighted mean over available signals, and the weight available; raw null when none is. */
export function combine(signals: Record<SignalName, Signal>): { raw: number | null; availableWeight: number } {
  let sum = 0;
  let availableWeight = 0;
  for (const [name, s] of Object.entries(signals) as Array<[SignalName, Signal]>) {
    if (!s.available) continue;
    sum += s.subScore! * SIGNAL_WEIGHTS[name];
    availableWeight += SIGNAL_WEIGHTS[name];
  }
  return { raw: availableWeight > 0 ? sum / availableWeight : null, availableWeight };
}

/**
 * The hard human clamp: a user whose requests come mostly (>= 30 %) from a declared coding agent
 * and who rests at night (rest-gap part available and below 0.5) is at most 0.5 raw.
 */
export function humanClampApplies(a: UserAggregates, daily: Signal): boolean {
  const rest = daily.parts?.rest_gap;
  return agentShare(a) >= 0.3 && rest !== undefined && rest.available && rest.subScore! < 0.5;
}

export function automationScore(a: UserAggregates, options: { days: number; computedAt: Date }): AutomationScore {
  const signals = signalsOf(a);
  const combined = combine(signals);
  const clamp = combined.raw !== null && humanClampApplies(a, signals.daily_activity_shape);
  const raw = clamp ? Math.min(combined.raw!, 0.5) : combined.raw;
  const alpha = a.n / (a.n + 30);
  const score = round4(clamp01(alpha * (raw ?? 0.5) + (1 - alpha) * 0.5));
  const views = {} as Record<SignalName, SignalView>;
  for (const [name, s] of Object.entries(signals) as Array<[SignalName, Signal]>) {
    const weight = SIGNAL_WEIGHTS[name];
    views[name] = {
      ...partView({ available: s.available, weight, subScore: s.subScore, inputs: s.inputs }),
      effective_weight: s.available ? round4(weight / combined.availableWeight) : 0,
      ...(s.parts ? { parts: Object.fromEntries(Object.entries(s.parts).map(([k, p]) => [k, partView(p)])) } : {}),
    };
  }
  return {
    user_id: a.userId, score, band: bandOf(score), confidence: round4(alpha * (combined.availableWeight / TOTAL_WEIGHT)),
    insufficient_data: a.n < MIN_REQUESTS, n_requests: a.n, window_days: options.days, computed_at: options.computedAt.toISOString(),
    raw: raw === null ? null : round4(raw), alpha: round4(alpha), available_weight: round4(combined.availableWeight),
    human_clamp: clamp, signals: views,
  };
}
