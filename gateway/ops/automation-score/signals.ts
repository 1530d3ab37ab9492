/**
 * The seven signals of the automation score (docs/automation-score.md), each a pure function of a
 * user's aggregates: whether it is available (its data floor is met) and its sub-score in [0, 1]
 * (1 = scripted). A signal below its floor is unavailable and carries no sub-score: the
 * combination drops it and re-normalizes the others, never counting it as 0.
 */
import type { Quartiles, UserAggregates } from './aggregates';
import { CLASS_PRIOR, classCounts, type UserAgentClass } from './user-agent-class';

export type SignalName =
  | 'turn_pattern' | 'prompt_size_dispersion' | 'user_message_shape' | 'client_tool_prior'
  | 'daily_activity_shape' | 'tool_call_human_tell' | 'agent_opener_override';

/** Default weights; they sum to {@link TOTAL_WEIGHT}. */
export const SIGNAL_WEIGHTS: Readonly<Record<SignalName, number>> = {
  turn_pattern: 0.24,
  prompt_size_dispersion: 0.17,
  user_message_shape: 0.15,
  client_tool_prior: 0.16,
  daily_activity_shape: 0.27,
  tool_call_human_tell: 0.08,
  agent_opener_override: 0.08,
};

export const TOTAL_WEIGHT = 1.15;

/** A part of a fused signal (daily_activity_shape, user_message_shape). */
export interface Part {
  available: boolean;
  weight: number;
  subScore: number | null;
  inputs: Record<string, unknown>;
}

export interface Signal {
  available: boolean;
  subScore: number | null;
  inputs: Record<string, unknown>;
  parts?: Record<string, Part>;
}

export function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/** Relative spread `(p75 - p25) / median`, or undefined when the median is not positive. */
export function relativeSpread(q: Quartiles | null): number | undefined {
  if (!q || !(q[1] > 0)) return undefined;
  return (q[2] - q[0]) / q[1];
}

function signal(available: boolean, subScore: () => number, inputs: Record<string, unknown>): Signal {
  return { available, subScore: available ? subScore() : null, inputs };
}

/** A part of a fused signal, scored only when available. */
export function part(weight: number, available: boolean, subScore: () => number, inputs: Record<string, unknown>): Part {
  return { available, weight, subScore: available ? subScore() : null, inputs };
}

/** Fuses parts: their weighted mean re-normalized over the available ones. */
export function fuseParts(parts: Record<string, Part>, inputs: Record<string, unknown> = {}): Signal {
  let sum = 0;
  let weight = 0;
  for (const p of Object.values(parts)) {
    if (!p.available) continue;
    sum += p.subScore! * p.weight;
    weight += p.weight;
  }
  return { available: weight > 0, subScore: weight > 0 ? sum / weight : null, inputs, parts };
}

/** Share of requests from a declared coding agent (`metadata.agent`). */
export function agentShare(a: UserAggregates): number {
  return a.n === 0 ? 0 : a.withAgent / a.n;
}

export function turnPattern(a: UserAggregates): Signal {
  const f1 = a.nChat === 0 ? null : a.oneShot / a.nChat;
  const depthFactor = a.turnsP90 !== null && a.turnsP90 >= 3 ? 0.5 : 1.0;
  return signal(a.nChat >= 5, () => clamp01(f1! * depthFactor), { n_chat: a.nChat, one_shot: a.oneShot, one_shot_share: f1, p90_user_turns: a.turnsP90, depth_factor: depthFactor });
}

export function promptSizeDispersion(a: UserAggregates): Signal {
  const rcv = relativeSpread(a.promptTokens);
  return signal(a.nSized >= 8 && rcv !== undefined, () => clamp01(1 - rcv! / 0.5), { n_sz: a.nSized, prompt_tokens_quartiles: a.promptTokens, rcv: rcv ?? null });
}

export function clientToolPrior(a: UserAggregates): Signal {
  const counts = classCounts(a.userAgents);
  let weighted = 0;
  for (const [cls, n] of Object.entries(counts)) weighted += CLASS_PRIOR[cls as UserAgentClass] * n;
  const uaBase = a.n === 0 ? null : weighted / a.n;
  const share = agentShare(a);
  return signal(a.n > 0, () => clamp01(uaBase! * (1 - 0.85 * Math.min(share, 1))), { user_agent_classes: counts, ua_base: uaBase, agent_share: share });
}

export function toolCallHumanTell(a: UserAggregates): Signal {
  const share = a.nChat === 0 ? null : a.withToolCalls / a.nChat;
  return signal(a.nChat >= 5 && a.withToolCalls > 0, () => clamp01(0.5 - share!), { n_chat: a.nChat, requests_with_tool_calls: a.withToolCalls, tool_calls: a.toolCalls, toolcall_share: share });
}

export function agentOpenerOverride(a: UserAggregates): Signal {
  const share = agentShare(a);
  return signal(share >= 0.05, () => clamp01(0.15 - share), { requests_with_agent: a.withAgent, agent_share: share });
}

export function userMessageShape(a: UserAggregates): Signal {
  const sizeRcv = relativeSpread(a.messageChars);
  const distinctRatio = a.nHashed === 0 ? null : a.distinctHashes / a.nHashed;
  return fuseParts({
    size_dispersion: part(0.4, a.nMessageSized >= 8 && sizeRcv !== undefined, () => clamp01(1 - sizeRcv! / 0.5),
      { sized_messages: a.nMessageSized, chars_quartiles: a.messageChars, size_rcv: sizeRcv ?? null }),
    entropy: part(0.25, a.nMessageEntropy >= 5, () => clamp01(1 - a.meanEntropy! / 4.0),
      { messages: a.nMessageEntropy, mean_entropy: a.meanEntropy }),
    repetition: part(0.35, a.nHashed >= 8, () => clamp01((1 - distinctRatio!) / 0.5),
      { hashed_messages: a.nHashed, distinct_hashes: a.distinctHashes, distinct_ratio: distinctRatio }),
  });
}
