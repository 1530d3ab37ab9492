/**
 * The automation score's combination (gateway/ops/automation-score/score.ts): dropped signals
 * re-normalize the others, the hard human clamp, alpha shrinkage, confidence, `insufficient_data`
 * and the four bands' bounds. Expected values are worked out by hand in the comments.
 */
import assert from 'node:assert/strict';
import { emptyAggregates, type UserAggregates } from '../../../../../gateway/ops/automation-score/aggregates';
import { automationScore, bandOf } from '../../../../../gateway/ops/automation-score/score';

const AT = new Date('2026-12-07T12:00:00Z');

function aggregates(over: Partial<UserAggregates>): UserAggregates {
  return { ...emptyAggregates(7), ...over };
}

function hoursAt(hours: number[], n: number): number[] {
  const out = new Array<number>(24).fill(0);
  for (const h of hours) out[h] = n;
  return out;
}

const OFFICE = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17];

describe('automation score: combination', () => {
  it('bands: lower bounds inclusive, upper exclusive, 1.00 in scripted_batch', () => {
    const cases: Array<[number, string]> = [
      [0, 'likely_human'], [0.3499, 'likely_human'], [0.35, 'mixed_or_uncertain'], [0.5999, 'mixed_or_uncertain'],
      [0.6, 'likely_automated'], [0.7999, 'likely_automated'], [0.8, 'scripted_batch'], [1, 'scripted_batch'],
    ];
    for (const [score, band] of cases) assert.equal(bandOf(score), band, String(score));
  });

  it('a user with only client_tool_prior available: raw is that signal alone, confidence alpha × 0.16 / 1.15', () => {
    // N 3 curl requests: ua_base 0.85 = raw. alpha = 3/33. score = 0.85·(1/11) + 0.5·(10/11) = 0.531818…
    const s = automationScore(aggregates({ n: 3, userAgents: { 'curl/8': 3 }, hours: hoursAt([1], 3) }), { days: 30, computedAt: AT });
    assert.equal(s.raw, 0.85);
    assert.equal(s.score, 0.5318);
    assert.equal(s.band, 'mixed_or_uncertain');
    assert.equal(s.confidence, Math.round((3 / 33) * (0.16 / 1.15) * 1e4) / 1e4);
    assert.equal(s.insufficient_data, true);
    assert.equal(s.signals.turn_pattern.available, false);
    assert.equal(s.signals.turn_pattern.sub_score, null, 'a dropped signal has no sub-score (never 0)');
    assert.equal(s.signals.client_tool_prior.effective_weight, 1);
    assert.deepEqual([s.n_requests, s.window_days, s.computed_at], [3, 30, AT.toISOString()]);
  });

  it('insufficient_data below 5 requests; no rows at all scores 0.5 with no raw', () => {
    assert.equal(automationScore(aggregates({ n: 4, userAgents: { '': 4 } }), { days: 7, computedAt: AT }).insufficient_data, true);
    assert.equal(automationScore(aggregates({ n: 5, userAgents: { '': 5 } }), { days: 7, computedAt: AT }).insufficient_data, false);
    const empty = automationScore(emptyAggregates(9), { days: 7, computedAt: AT });
    assert.deepEqual([empty.score, empty.raw, empty.confidence, empty.band, empty.insufficient_data], [0.5, null, 0, 'mixed_or_uncertain', true]);
  });

  it('re-normalizes over the available signals and reports confidence from the available weight', () => {
    // N 30 (alpha 0.5), all chat, 30 one-shot, p90 turns 1 → turn_pattern 1.0 (w 0.24);
    // 30 curl → client_tool_prior 0.85 (w 0.16); 30 requests in hours 0..9 (3 each) → coverage 10/24 → 0,
    // Hnorm log2(10)/log2(24) = 0.724528 → 0.534591, quiet 14 h → 0; gaps [60, 60, 60] → regularity 1.
    // daily = (0.2·0 + 0.2·0.534591 + 0.3·0 + 0.3·1) / 1.0 = 0.406918 (w 0.27).
    // raw = (0.24·1 + 0.16·0.85 + 0.27·0.406918) / 0.67 = (0.24 + 0.136 + 0.109868) / 0.67 = 0.725176
    // score = 0.5·0.725176 + 0.25 = 0.612588 → likely_automated; confidence = 0.5 × 0.67/1.15 = 0.291304
    const a = aggregates({
      n: 30, nChat: 30, oneShot: 30, turnsP90: 1, userAgents: { 'curl/8': 30 }, hours: hoursAt([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 3),
      nGaps: 29, gaps: [60, 60, 60],
    });
    const s = automationScore(a, { days: 30, computedAt: AT });
    assert.equal(s.raw, 0.7252);
    assert.equal(s.score, 0.6126);
    assert.equal(s.band, 'likely_automated');
    assert.equal(s.available_weight, 0.67);
    assert.equal(s.confidence, 0.2913);
    assert.equal(s.signals.prompt_size_dispersion.available, false);
    assert.equal(s.signals.turn_pattern.effective_weight, Math.round((0.24 / 0.67) * 1e4) / 1e4);
  });

  it('the hard human clamp caps raw at 0.5 for agent share >= 0.3 with a night rest; not at 0.29 or without the rest-gap part', () => {
    // N 100, office hours (rest gap 14 h → part 0 < 0.5), every request one-shot (turn_pattern 1, w 0.24),
    // identical prompt sizes (prompt_size_dispersion 1, w 0.17), 30 % from a coding agent and 70 curl:
    // ua_base = (30·0.10 + 70·0.85)/100 = 0.625, × (1 - 0.85·0.3) = 0.465625 (w 0.16);
    // agent_opener_override clamp01(0.15 - 0.3) = 0 (w 0.08); tool_call_human_tell dropped (no tool calls).
    // daily (w 0.27): coverage 10/24 → 0; Hnorm = log2(10)/log2(24) = 0.724528 → 0.534591; rest 0;
    // regularity dropped (no gaps): (0.2·0.534591)/0.7 = 0.152740.
    // raw = (0.24 + 0.17 + 0.0745 + 0.041240 + 0) / 0.92 = 0.571457 → clamped to 0.5; score = 0.5 whatever alpha.
    // With 29 agent and 71 curl requests: ua_base 0.6325 × 0.7535 = 0.476589;
    // raw = (0.41 + 0.076254 + 0.041240) / 0.92 = 0.573363, not clamped.
    const base = { n: 100, nChat: 100, oneShot: 100, turnsP90: 1, nSized: 100, promptTokens: [100, 100, 100] as const, hours: hoursAt(OFFICE, 10) };
    const clamped = automationScore(aggregates({ ...base, withAgent: 30, userAgents: { 'claude-cli/1': 30, 'curl/8': 70 } }), { days: 30, computedAt: AT });
    assert.equal(clamped.human_clamp, true);
    assert.equal(clamped.raw, 0.5);
    // alpha 100/130: score = 0.5 exactly.
    assert.equal(clamped.score, 0.5);
    const below = automationScore(aggregates({ ...base, withAgent: 29, userAgents: { 'claude-cli/1': 29, 'curl/8': 71 } }), { days: 30, computedAt: AT });
    assert.equal(below.human_clamp, false);
    assert.equal(below.raw, 0.5734);
    // Round the clock (rest gap 0 h → part 1.0, not < 0.5): no clamp.
    const noRest = automationScore(aggregates({ ...base, hours: hoursAt([...Array(24).keys()], 4), withAgent: 30, userAgents: { 'claude-cli/1': 30, 'curl/8': 70 } }), { days: 30, computedAt: AT });
    assert.equal(noRest.human_clamp, false);
    // Rest-gap part unavailable (N 9): no clamp even with agent share 1.
    const fewRows = automationScore(aggregates({ n: 9, nChat: 9, oneShot: 9, turnsP90: 1, withAgent: 9, hours: hoursAt([9], 9), userAgents: { 'claude-cli/1': 9 } }), { days: 30, computedAt: AT });
    assert.equal(fewRows.human_clamp, false);
  });

  it('the score shrinks towards 0.5 by alpha = N / (N + 30)', () => {
    // Only client_tool_prior (curl 0.85; N < 10 so no hour part): N 6, alpha 1/6 → 0.85/6 + 0.5·5/6 = 0.558333;
    // N 9, alpha 9/39 → (0.85·9 + 0.5·30)/39 = 0.580769.
    assert.equal(automationScore(aggregates({ n: 6, userAgents: { 'curl/8': 6 } }), { days: 30, computedAt: AT }).score, 0.5583);
    assert.equal(automationScore(aggregates({ n: 9, userAgents: { 'curl/8': 9 } }), { days: 30, computedAt: AT }).score, 0.5808);
  });
});
