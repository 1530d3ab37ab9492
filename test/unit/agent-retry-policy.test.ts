/**
 * The retry policy of agent drivers (docs/agent-events.md): 15 retries, exponential delay from 500 ms capped at
 * 32 s plus up to 25 % jitter, integer Retry-After honoured, 60 s ordinary-mode ceiling, deadline.
 */
import assert from 'node:assert/strict';
import { backoffMs, parseRetryAfterSeconds, retryDecision, type RetryDecision } from '../../activities/agent/retry-policy';

const NOW = 1_000_000;
const FAR = NOW + 3_600_000;
const noJitter = () => 0;
const fullJitter = () => 0.999999;

function waitOf(decision: RetryDecision): number {
  assert.ok(decision.retry, `expected a retry, got ${JSON.stringify(decision)}`);
  return decision.waitMs;
}

describe('agent retry policy', () => {
  const expectedBase = [500, 1000, 2000, 4000, 8000, 16_000, 32_000, 32_000, 32_000, 32_000, 32_000, 32_000, 32_000, 32_000, 32_000];

  it('waits 500 ms · 2^(n-1) capped at 32 s for retries 1..15 without jitter', () => {
    expectedBase.forEach((base, i) => {
      assert.equal(backoffMs(i + 1), base);
      assert.equal(waitOf(retryDecision({ attempt: i + 1, now: NOW, deadline: FAR, random: noJitter })), base);
    });
  });

  it('adds at most 25 % jitter', () => {
    expectedBase.forEach((base, i) => {
      const wait = waitOf(retryDecision({ attempt: i + 1, now: NOW, deadline: FAR, random: fullJitter }));
      assert.ok(wait > base, `retry ${i + 1}: ${wait} should exceed ${base}`);
      assert.ok(wait <= base * 1.25, `retry ${i + 1}: ${wait} above ${base * 1.25}`);
    });
    assert.equal(waitOf(retryDecision({ attempt: 3, now: NOW, deadline: FAR, random: () => 0.5 })), 2000 + 250);
  });

  it('stops at the 16th retry', () => {
    const decision = retryDecision({ attempt: 16, now: NOW, deadline: FAR, random: noJitter });
    assert.equal(decision.retry, false);
    assert.match((decision as { reason: string }).reason, /15 retries/);
  });

  it('uses an integer Retry-After when it asks for longer than the backoff, without jitter', () => {
    assert.equal(waitOf(retryDecision({ attempt: 1, retryAfter: '3', now: NOW, deadline: FAR, random: fullJitter })), 3000);
    assert.equal(waitOf(retryDecision({ attempt: 1, retryAfter: 7, now: NOW, deadline: FAR, random: noJitter })), 7000);
    assert.equal(waitOf(retryDecision({ attempt: 1, retryAfter: '60', now: NOW, deadline: FAR, random: noJitter })), 60_000);
  });

  it('keeps the backoff when Retry-After asks for less', () => {
    assert.equal(waitOf(retryDecision({ attempt: 6, retryAfter: '1', now: NOW, deadline: FAR, random: noJitter })), 16_000);
    assert.equal(waitOf(retryDecision({ attempt: 1, retryAfter: '0', now: NOW, deadline: FAR, random: noJitter })), 500);
  });

  it('ignores a Retry-After that is not an integer number of seconds', () => {
    for (const value of ['1.5', 'soon', '-3', 'Wed, 21 Oct 2026 07:28:00 GMT', '', 2.5, -1]) {
      assert.equal(parseRetryAfterSeconds(value), undefined, String(value));
      assert.equal(waitOf(retryDecision({ attempt: 2, retryAfter: value, now: NOW, deadline: FAR, random: noJitter })), 1000, String(value));
    }
    assert.equal(parseRetryAfterSeconds(' 12 '), 12);
  });

  it('in ordinary mode stops when the required delay exceeds 60 s; persistent mode waits', () => {
    const ordinary = retryDecision({ attempt: 1, retryAfter: '61', now: NOW, deadline: FAR, random: noJitter });
    assert.equal(ordinary.retry, false);
    assert.match((ordinary as { reason: string }).reason, /61 s exceeds 60 s/);
    assert.equal(waitOf(retryDecision({ attempt: 1, retryAfter: '61', now: NOW, deadline: FAR, random: noJitter, mode: 'persistent' })), 61_000);
  });

  it('never waits past the turn deadline', () => {
    const late = retryDecision({ attempt: 7, now: NOW, deadline: NOW + 31_999, random: noJitter });
    assert.equal(late.retry, false);
    assert.match((late as { reason: string }).reason, /deadline/);
    assert.equal(waitOf(retryDecision({ attempt: 7, now: NOW, deadline: NOW + 32_001, random: noJitter })), 32_000);
    assert.equal(retryDecision({ attempt: 1, retryAfter: '10', now: NOW, deadline: NOW + 9000, random: noJitter }).retry, false);
    assert.equal(retryDecision({ attempt: 1, now: NOW, deadline: NOW, random: noJitter }).retry, false);
  });
});
