/**
 * The automation score's signals (gateway/ops/automation-score/): each signal and each fused part
 * at its availability floor (just below: dropped, no sub-score; at: available), the sub-score
 * formulas on hand-computed inputs, and the user-agent classes.
 */
import assert from 'node:assert/strict';
import { emptyAggregates, type UserAggregates } from '../../../../../gateway/ops/automation-score/aggregates';
import { dailyActivityShape, maxQuietGapHours, normalizedHourEntropy } from '../../../../../gateway/ops/automation-score/daily-activity';
import {
  agentOpenerOverride, clientToolPrior, promptSizeDispersion, toolCallHumanTell, turnPattern, userMessageShape,
} from '../../../../../gateway/ops/automation-score/signals';
import { userAgentClass } from '../../../../../gateway/ops/automation-score/user-agent-class';

function aggregates(over: Partial<UserAggregates>): UserAggregates {
  return { ...emptyAggregates(7), ...over };
}

/** 24 buckets with `n` requests in each of `hours`. */
function hoursAt(hours: number[], n = 1): number[] {
  const out = new Array<number>(24).fill(0);
  for (const h of hours) out[h] = n;
  return out;
}

const close = (actual: number | null, expected: number, what = '') => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-9, `${what} ${actual} ≈ ${expected}`);
};

describe('automation score: signals at their floors', () => {
  it('turn_pattern: n_chat 4 dropped, 5 available; one-shot share halved when p90 turns >= 3', () => {
    assert.deepEqual([turnPattern(aggregates({ nChat: 4, oneShot: 4, turnsP90: 1 })).available, turnPattern(aggregates({ nChat: 4 })).subScore], [false, null]);
    const five = turnPattern(aggregates({ nChat: 5, oneShot: 4, turnsP90: 1 }));
    assert.equal(five.available, true);
    close(five.subScore, 0.8, 'f1 = 4/5, depth 1.0');
    close(turnPattern(aggregates({ nChat: 5, oneShot: 4, turnsP90: 3 })).subScore, 0.4, 'p90 3: depth 0.5');
    close(turnPattern(aggregates({ nChat: 5, oneShot: 4, turnsP90: 2.9 })).subScore, 0.8, 'p90 2.9: depth 1.0');
  });

  it('prompt_size_dispersion: n_sz 7 dropped, 8 available; a zero median drops it; rcv of 0.5 or more scores 0', () => {
    const q = [90, 100, 110] as const;
    assert.equal(promptSizeDispersion(aggregates({ nSized: 7, promptTokens: q })).available, false);
    close(promptSizeDispersion(aggregates({ nSized: 8, promptTokens: q })).subScore, 0.6, 'rcv 0.2 → 1 - 0.4');
    assert.equal(promptSizeDispersion(aggregates({ nSized: 8, promptTokens: [0, 0, 5] })).available, false);
    close(promptSizeDispersion(aggregates({ nSized: 20, promptTokens: [50, 100, 150] })).subScore, 0, 'rcv 1.0 → clamped to 0');
    close(promptSizeDispersion(aggregates({ nSized: 20, promptTokens: [100, 100, 100] })).subScore, 1);
  });

  it('client_tool_prior: available from the first request; request-weighted class mean damped by the agent share', () => {
    assert.equal(clientToolPrior(aggregates({ n: 0 })).available, false);
    close(clientToolPrior(aggregates({ n: 1, userAgents: { 'curl/8.5.0': 1 } })).subScore, 0.85);
    // 6 curl (0.85) + 2 browser (0.10) + 2 absent (0.70): (5.1 + 0.2 + 1.4) / 10 = 0.67
    close(clientToolPrior(aggregates({ n: 10, userAgents: { 'curl/8.5.0': 6, 'Mozilla/5.0 (X11)': 2, '': 2 } })).subScore, 0.67);
    // 10 claude-cli (0.10), agent share 1: 0.10 × (1 - 0.85) = 0.015
    close(clientToolPrior(aggregates({ n: 10, withAgent: 10, userAgents: { 'claude-cli/1.0.3 (external, cli)': 10 } })).subScore, 0.015);
    // SDK 0.50, agent share 0.5: 0.5 × (1 - 0.425) = 0.2875
    close(clientToolPrior(aggregates({ n: 10, withAgent: 5, userAgents: { 'OpenAI/JS 4.0.0': 10 } })).subScore, 0.2875);
  });

  it('tool_call_human_tell: dropped without tool calls or with n_chat 4; else 0.5 - share', () => {
    assert.equal(toolCallHumanTell(aggregates({ nChat: 5, withToolCalls: 0 })).available, false);
    assert.equal(toolCallHumanTell(aggregates({ nChat: 4, withToolCalls: 4 })).available, false);
    close(toolCallHumanTell(aggregates({ nChat: 5, withToolCalls: 1 })).subScore, 0.3);
    close(toolCallHumanTell(aggregates({ nChat: 10, withToolCalls: 8 })).subScore, 0, 'share 0.8 → clamped');
  });

  it('agent_opener_override: share 0.04 dropped, 0.05 available at 0.10; 0.15 and above score 0', () => {
    assert.equal(agentOpenerOverride(aggregates({ n: 100, withAgent: 4 })).available, false);
    const at = agentOpenerOverride(aggregates({ n: 100, withAgent: 5 }));
    assert.equal(at.available, true);
    close(at.subScore, 0.1);
    close(agentOpenerOverride(aggregates({ n: 100, withAgent: 40 })).subScore, 0);
  });

  it('user_message_shape: each part at its floor, and the parts re-normalized over the available ones', () => {
    const none = userMessageShape(aggregates({ nMessageSized: 7, messageChars: [90, 100, 110], nMessageEntropy: 4, meanEntropy: 2, nHashed: 7, distinctHashes: 1 }));
    assert.deepEqual([none.available, none.subScore], [false, null], 'all three parts one below their floors');
    const entropyOnly = userMessageShape(aggregates({ nMessageEntropy: 5, meanEntropy: 3 }));
    close(entropyOnly.subScore, 0.25, 'entropy alone: 1 - 3/4');
    const sized = userMessageShape(aggregates({ nMessageSized: 8, messageChars: [90, 100, 110] }));
    close(sized.subScore, 0.6, 'size alone: rcv 0.2');
    const hashed = userMessageShape(aggregates({ nHashed: 8, distinctHashes: 6 }));
    close(hashed.subScore, 0.5, 'repetition alone: (1 - 0.75) / 0.5');
    // size 0.6 (w 0.40) and repetition 1.0 (w 0.35, one distinct hash of 8 → ratio 0.125 → clamp01(1.75)):
    // (0.24 + 0.35) / 0.75 = 0.786666…
    const two = userMessageShape(aggregates({ nMessageSized: 8, messageChars: [90, 100, 110], nHashed: 8, distinctHashes: 1 }));
    close(two.subScore, 0.59 / 0.75);
    assert.equal(two.parts!.entropy!.available, false);
  });

  it('daily_activity_shape: hour parts need N >= 10, regularity 3 gaps with a positive median', () => {
    const nine = dailyActivityShape(aggregates({ n: 9, hours: hoursAt([0, 1, 2, 3, 4, 5, 6, 7, 8]), nGaps: 2, gaps: [60, 60, 60] }));
    assert.deepEqual([nine.available, nine.subScore], [false, null]);
    const regular = dailyActivityShape(aggregates({ n: 4, hours: hoursAt([1, 2, 3, 4]), nGaps: 3, gaps: [60, 60, 60] }));
    assert.deepEqual([regular.parts!.hour_coverage!.available, regular.parts!.interarrival_regularity!.available], [false, true]);
    close(regular.subScore, 1, 'regularity alone: gap_rcv 0');
    assert.equal(dailyActivityShape(aggregates({ n: 4, nGaps: 3, gaps: [0, 0, 10] })).available, false, 'median gap 0: dropped');
    // N 10, hours 0..9 one each: coverage 10/24 → 0; Hnorm log2(10)/log2(24) = 0.7245 → (0.7245-0.5)/0.42 = 0.5346;
    // quiet run 10..23 = 14 h → 0; gaps [100, 200, 300]: rcv 1 → 0. (0.2·0 + 0.2·0.5346 + 0) / 1.0
    const ten = dailyActivityShape(aggregates({ n: 10, hours: hoursAt([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), nGaps: 9, gaps: [100, 200, 300] }));
    close(ten.subScore, (0.2 * ((Math.log2(10) / Math.log2(24) - 0.5) / 0.42)) / 1.0);
  });

  it('the rest gap is the longest circular run of idle clock hours', () => {
    assert.equal(maxQuietGapHours(hoursAt([8, 9, 10, 11, 12, 13, 14, 15, 16, 17])), 14, '18..23 and 0..7');
    assert.equal(maxQuietGapHours(hoursAt([3, 20])), 16, '4..19');
    assert.equal(maxQuietGapHours(hoursAt([...Array(24).keys()])), 0);
    assert.equal(maxQuietGapHours(hoursAt([0])), 23);
    close(normalizedHourEntropy(hoursAt([...Array(24).keys()], 5)), 1);
    close(normalizedHourEntropy(hoursAt([4], 50)), 0);
  });

  it('classifies user agents: coding agent or browser, SDK, HTTP library, unknown product, absent', () => {
    const cases: Array<[string | undefined, string]> = [
      ['claude-cli/1.0.3 (external, cli)', 'agent_or_browser'], ['Mozilla/5.0 (Macintosh) Safari/605.1.15', 'agent_or_browser'],
      ['OpenAI/Python 1.40.0', 'sdk'], ['AsyncOpenAI/Python 1.40.0', 'sdk'], ['curl/8.5.0', 'http_library'],
      ['python-requests/2.31.0', 'http_library'], ['Python/3.11 aiohttp/3.9.1', 'http_library'], ['Go-http-client/2.0', 'http_library'],
      ['my-batch-tool/0.3', 'unknown_product'], ['', 'unrecognized'], [undefined, 'unrecognized'], ['???', 'unrecognized'],
      ['somebot', 'unrecognized'],
    ];
    for (const [ua, cls] of cases) assert.equal(userAgentClass(ua), cls, String(ua));
  });
});
