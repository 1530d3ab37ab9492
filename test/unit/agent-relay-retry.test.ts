/**
 * The model relay's retry loop (activities/agent/relay-retry.ts) with an injected clock, random
 * source and sleep: which answers are retried, the waits the drivers' policy gives (Retry-After
 * honoured, jitter, 60 s ordinary ceiling, 15 retries, the turn deadline), and what it says when it
 * gives up.
 */
import assert from 'node:assert/strict';
import { isRetryableStatus, relayRetryEvent, sendWithRetries, type RelayRetry, type RelayRetryOptions, type RelayTry } from '../../activities/agent/relay-retry';

const NOW = 5_000_000;

/** A scripted gateway: one answer per try, the last repeated. */
function scripted(answers: Array<{ status: number | null; retryAfter?: string }>) {
  let tries = 0;
  const send = (): Promise<RelayTry<number>> => {
    const answer = answers[Math.min(tries, answers.length - 1)]!;
    tries += 1;
    return Promise.resolve({ value: tries, status: answer.status, ...(answer.retryAfter !== undefined ? { retryAfter: answer.retryAfter } : {}), reason: answer.status === null ? 'a connection error' : `HTTP ${answer.status}` });
  };
  return { send, tries: () => tries };
}

/** Options with a clock that moves only when the loop sleeps. */
function harness(overrides: Partial<RelayRetryOptions> = {}) {
  let clock = NOW;
  const slept: number[] = [];
  const retries: RelayRetry[] = [];
  const discarded: number[] = [];
  const options: RelayRetryOptions = {
    deadline: NOW + 3_600_000, now: () => clock, random: () => 0,
    sleep: (ms) => {
      slept.push(ms);
      clock += ms;
      return Promise.resolve();
    },
    onRetry: (retry) => retries.push(retry),
    ...overrides,
  };
  return { options, slept, retries, discarded, discard: (value: number) => discarded.push(value) };
}

describe('model relay retry loop', () => {
  it('retries 429, 408, 5xx and connection errors; passes other answers on at once', () => {
    for (const status of [null, 408, 429, 500, 502, 503, 529]) assert.ok(isRetryableStatus(status), String(status));
    for (const status of [200, 201, 304, 400, 401, 403, 404, 413, 422]) assert.ok(!isRetryableStatus(status), String(status));
  });

  it('retries two 503s (one with Retry-After: 1) and returns the answer that ended it', async () => {
    const gateway = scripted([{ status: 503, retryAfter: '1' }, { status: 503 }, { status: 200 }]);
    const h = harness();
    const outcome = await sendWithRetries(gateway.send, h.discard, h.options, new AbortController().signal);
    assert.deepEqual(outcome, { value: 3 });
    assert.equal(gateway.tries(), 3);
    assert.deepEqual(h.slept, [1000, 1000], 'Retry-After 1 s beats the first 500 ms; then 1 s of backoff');
    assert.deepEqual(h.discarded, [1, 2], 'the retried answers are dropped, the last one is not');
    assert.deepEqual(h.retries, [
      { attempt: 1, waitMs: 1000, status: 503, retryAfter: 1, reason: 'HTTP 503' },
      { attempt: 2, waitMs: 1000, status: 503, reason: 'HTTP 503' },
    ]);
    assert.deepEqual(relayRetryEvent(h.retries[0]!), { attempt: 1, wait_ms: 1000, status: 503, retry_after: 1, reason: 'HTTP 503', source: 'relay' });
  });

  it('adds the policy jitter from the injected random source', async () => {
    const gateway = scripted([{ status: 429 }, { status: 429 }, { status: 200 }]);
    const h = harness({ random: () => 0.5 });
    await sendWithRetries(gateway.send, h.discard, h.options, new AbortController().signal);
    assert.deepEqual(h.slept, [500 + 62, 1000 + 125]);
  });

  it('gives up in ordinary mode when Retry-After asks for more than 60 s, passing that answer on', async () => {
    const gateway = scripted([{ status: 503, retryAfter: '120' }]);
    const h = harness();
    const outcome = await sendWithRetries(gateway.send, h.discard, h.options, new AbortController().signal);
    assert.equal(outcome.value, 1);
    assert.equal(outcome.gaveUp, 'The gateway answered HTTP 503 and the model relay stopped retrying: the required delay of 120 s exceeds 60 s');
    assert.deepEqual(h.slept, []);
    assert.deepEqual(h.discarded, []);
    const persistent = harness({ mode: 'persistent' });
    const waited = await sendWithRetries(scripted([{ status: 503, retryAfter: '120' }, { status: 200 }]).send, persistent.discard, persistent.options, new AbortController().signal);
    assert.deepEqual({ waited, slept: persistent.slept }, { waited: { value: 2 }, slept: [120_000] });
  });

  it('stops after 15 retries of a connection error', async () => {
    const gateway = scripted([{ status: null }]);
    const h = harness();
    const outcome = await sendWithRetries(gateway.send, h.discard, h.options, new AbortController().signal);
    assert.equal(gateway.tries(), 16);
    assert.equal(h.retries.length, 15);
    assert.deepEqual(h.slept, [500, 1000, 2000, 4000, 8000, 16_000, ...Array<number>(9).fill(32_000)]);
    assert.match(outcome.gaveUp ?? '', /a connection error and the model relay stopped retrying: gave up after 15 retries/);
  });

  it('never waits past the turn deadline', async () => {
    const gateway = scripted([{ status: 502 }]);
    const h = harness({ deadline: NOW + 1500 });
    const outcome = await sendWithRetries(gateway.send, h.discard, h.options, new AbortController().signal);
    assert.deepEqual(h.slept, [500], 'the second wait (1 s) would end at the deadline');
    assert.match(outcome.gaveUp ?? '', /waiting would pass the turn deadline/);
  });

  it('returns the answer without retrying once the call was abandoned', async () => {
    const abort = new AbortController();
    abort.abort();
    const gateway = scripted([{ status: 503 }]);
    const h = harness();
    assert.deepEqual(await sendWithRetries(gateway.send, h.discard, h.options, abort.signal), { value: 1 });
    assert.deepEqual(h.retries, []);
  });
});
