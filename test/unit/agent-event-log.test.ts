/**
 * Pure pieces of the agent event log: event id parsing and ordering, resume points, dedupe keys,
 * SSE frames, and the host sink's retry decisions against a scripted fetch.
 */
import assert from 'node:assert/strict';
import { compareIds, defaultDedupeKey, parseEventId, type StoredEvent } from '../../agent/events/event-store';
import { eventFrame } from '../../api/sse/event-stream';
import { resumePointOf } from '../../api/routes/agent-events';
import { ApiEventSink, AttemptFencedError, EventRejectedError } from '../../activities/agent/api-event-sink';
import { SseSplitter } from '../../gateway/sse/sse-splitter';

describe('agent event log helpers', () => {
  it('parses event ids as canonical decimals within bigint range', () => {
    assert.equal(parseEventId('0'), '0');
    assert.equal(parseEventId(' 0042 '), '42');
    assert.equal(parseEventId(17), '17');
    assert.equal(parseEventId(9_007_199_254_740_993n), '9007199254740993');
    assert.equal(parseEventId('9223372036854775807'), '9223372036854775807');
    for (const bad of ['', '-1', '1.5', '1e3', 'abc', '9223372036854775808', '12345678901234567890']) assert.equal(parseEventId(bad), undefined, bad);
  });

  it('orders decimal ids numerically', () => {
    assert.deepEqual(['10', '9', '100', '11'].sort(compareIds), ['9', '10', '11', '100']);
  });

  it('takes the resume point from Last-Event-ID before ?after=, and refuses malformed values', () => {
    assert.equal(resumePointOf(undefined, undefined), '0');
    assert.equal(resumePointOf('12', '5'), '12');
    assert.equal(resumePointOf(undefined, '5'), '5');
    assert.throws(() => resumePointOf('x', undefined), /Last-Event-ID/);
    assert.throws(() => resumePointOf(undefined, ['1', '2']), /after/);
  });

  it('dedupes attempt events by attempt and seq, control events by job, turn, type and seq', () => {
    assert.equal(defaultDedupeKey('job_a', { attemptId: 'att_1', turnSeq: 3, seq: 7, eventType: 'message' }), 'attempt:att_1:7');
    assert.equal(defaultDedupeKey('job_a', { attemptId: 'att_1', turnSeq: 3, seq: 7, eventType: 'notice' }), 'attempt:att_1:7');
    assert.equal(defaultDedupeKey('job_a', { attemptId: null, turnSeq: 3, seq: 0, eventType: 'turn_started' }), 'job:job_a:turn:3:turn_started:0');
  });

  it('frames an event so an SSE parser gets the JSON back, even with newlines in the payload', () => {
    const event: StoredEvent = { event_id: '5', turn_seq: 0, attempt_id: null, seq: 1, event_type: 'message', payload: { text: 'a\nb\r\n\n' }, is_error: false, created_at: '2026-01-01T00:00:00.000Z' };
    const frame = eventFrame(event);
    assert.match(frame, /^id: 5\nevent: message\ndata: /);
    const [data] = new SseSplitter().push(Buffer.from(frame));
    assert.deepEqual(JSON.parse(data!), event);
  });
});

describe('ApiEventSink retry decisions', () => {
  const CREDENTIAL = 'ahc_secret-credential-value';
  const sinkWith = (answers: Array<number | Error>) => {
    const calls: Array<{ url: string; authorization: string | null; body: unknown }> = [];
    const fakeFetch: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      calls.push({ url: input as string, authorization: headers.get('authorization'), body: JSON.parse(init?.body as string) });
      const answer = answers.shift() ?? 200;
      if (answer instanceof Error) return Promise.reject(answer);
      return Promise.resolve(new Response(answer === 200 ? '{"accepted":1}' : '{"error":{"message":"refused"}}', { status: answer }));
    };
    const sink = new ApiEventSink({ apiUrl: 'http://api.test/', hostId: 'h1', credential: CREDENTIAL, attemptId: 'att_1', fetch: fakeFetch, sleep: () => Promise.resolve(), maxTries: 3 });
    return { sink, calls };
  };

  it('posts to the attempt\'s route with the host credential and numbered events', async () => {
    const { sink, calls } = sinkWith([]);
    await sink.emit('message', { text: 'x' });
    await sink.emit('notice', {}, { isError: true });
    assert.equal(calls[0]!.url, 'http://api.test/v1/agent/hosts/h1/attempts/att_1/events');
    assert.equal(calls[0]!.authorization, `Bearer ${CREDENTIAL}`);
    assert.deepEqual(calls.map((c) => c.body), [
      { events: [{ seq: 0, event_type: 'message', payload: { text: 'x' }, is_error: false }] },
      { events: [{ seq: 1, event_type: 'notice', payload: {}, is_error: true }] },
    ]);
  });

  it('retries 5xx, 429 and network errors up to maxTries, then fails without the credential in the message', async () => {
    const ok = sinkWith([503, 429, 200]);
    await ok.sink.emit('message', {});
    assert.equal(ok.calls.length, 3);
    const failing = sinkWith([new TypeError('fetch failed'), 500, 502]);
    await assert.rejects(failing.sink.emit('message', {}), (err: unknown) => err instanceof EventRejectedError && err.status === 502 && !err.message.includes(CREDENTIAL));
    assert.equal(failing.calls.length, 3);
  });

  it('does not retry other refusals, and a 409 fences the sink', async () => {
    const refused = sinkWith([400]);
    await assert.rejects(refused.sink.emit('message', {}), (err: unknown) => err instanceof EventRejectedError && err.status === 400);
    assert.equal(refused.calls.length, 1);
    const fenced = sinkWith([409]);
    await assert.rejects(fenced.sink.emit('message', {}), AttemptFencedError);
    await assert.rejects(fenced.sink.emit('message', {}), AttemptFencedError);
    assert.equal(fenced.calls.length, 1);
  });
});
