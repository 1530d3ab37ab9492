/**
 * Host event ingestion through the real API on real PostgreSQL: the host credential, the attempt
 * fence, idempotent retries, refused control types and limits; and the host runner's
 * `ApiEventSink` against the same API.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { listEvents } from '../../agent/events/event-store';
import { ApiEventSink, AttemptFencedError } from '../../activities/agent/api-event-sink';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createAttempt, createJob, createOwner, createTurn } from '../support/agent-records';
import { waitFor } from '../support/wait';

describe('host event ingestion', () => {
  let t: TestDatabase;
  let api: TestApi;
  let hostA: { hostId: string; credential: string };
  let hostB: { hostId: string; credential: string };
  let jobId: string;
  let turnId: string;
  let attemptId: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    hostA = await enrollHost(t.db, 'host-a');
    hostB = await enrollHost(t.db, 'host-b');
    jobId = await createJob(t.db, (await createOwner(t.db)).userId);
    await createTurn(t.db, jobId, 0, 'completed');
    turnId = await createTurn(t.db, jobId, 1);
    attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-a' });
  });
  after(async () => {
    await api.close();
    await t.drop();
  });

  const post = (hostId: string, attempt: string, credential: string | undefined, body: unknown) =>
    fetch(`${api.url}/v1/agent/hosts/${hostId}/attempts/${attempt}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const events = (...seqs: number[]) => ({ events: seqs.map((seq) => ({ seq, event_type: 'message', payload: { text: `m${seq}` } })) });
  const stored = () => listEvents(t.db, jobId, 0, 1000);

  it('stores a batch with job and turn taken from the attempt, and a retry stores nothing twice', async () => {
    const res = await post('host-a', attemptId, hostA.credential, {
      events: [
        { seq: 0, event_type: 'message', payload: { text: 'hi' } },
        { seq: 1, event_type: 'tool_use', payload: { tool_name: 'shell', tool_use_id: 'tu1', input: { cmd: 'ls' } } },
        { seq: 2, event_type: 'tool_result', payload: { tool_use_id: 'tu1', output: 'x' }, is_error: true },
      ],
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { accepted: 3 });
    const rows = await stored();
    assert.deepEqual(rows.map((e) => [e.seq, e.event_type, e.turn_seq, e.attempt_id, e.is_error]), [
      [0, 'message', 1, attemptId, false], [1, 'tool_use', 1, attemptId, false], [2, 'tool_result', 1, attemptId, true],
    ]);
    const retry = await post('host-a', attemptId, hostA.credential, events(2, 3));
    assert.equal(retry.status, 200);
    assert.deepEqual((await stored()).map((e) => e.seq), [0, 1, 2, 3]);
    assert.equal((await stored())[2]!.event_type, 'tool_result', 'the first write of a seq wins');
  });

  it('refuses another host\'s credential, a wrong or missing one with 401', async () => {
    for (const credential of [hostB.credential, 'ahc_wrong', undefined]) {
      assert.equal((await post('host-a', attemptId, credential, events(10))).status, 401);
    }
    assert.equal((await post('no-such-host', attemptId, hostA.credential, events(10))).status, 401);
    assert.ok(!(await stored()).some((e) => e.seq === 10));
  });

  it('refuses with 409 an attempt of another host, an unknown one and a finished one, writing nothing', async () => {
    const expect409 = async (res: Response) => {
      assert.equal(res.status, 409);
      assert.equal(((await res.json()) as { error: { message: string } }).error.message, 'Attempt is not current');
    };
    await expect409(await post('host-b', attemptId, hostB.credential, events(20)));
    await expect409(await post('host-a', 'att_unknown', hostA.credential, events(20)));
    const finishedTurn = await createTurn(t.db, jobId, 2);
    const finished = await createAttempt(t.db, { jobId, turnId: finishedTurn, hostId: 'host-a', state: 'abandoned' });
    await expect409(await post('host-a', finished, hostA.credential, events(20)));
    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'completed' });
    try {
      await expect409(await post('host-a', attemptId, hostA.credential, events(20)));
    } finally {
      await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'running' });
    }
    assert.ok(!(await stored()).some((e) => e.seq === 20));
  });

  it('makes a batch racing the attempt\'s end wait for it, then refuses it', async () => {
    const turn = await createTurn(t.db, jobId, 6);
    const attempt = await createAttempt(t.db, { jobId, turnId: turn, hostId: 'host-a' });
    let posted: Promise<Response> | undefined;
    await t.db.transaction(async (trx) => {
      await trx('agent_attempts').where({ attempt_id: attempt }).update({ state: 'completed', finished_at: trx.fn.now() });
      posted = post('host-a', attempt, hostA.credential, events(0));
      await waitFor(async () => {
        const waiting = await t.db.raw<{ rows: Array<{ n: number }> }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
        return waiting.rows[0]!.n > 0;
      }, 'the ingestion to wait for the attempt row');
    });
    const res = await posted!;
    assert.equal(res.status, 409);
    assert.ok(!(await stored()).some((e) => e.attempt_id === attempt));
  });

  it('refuses control-plane event types, unknown types and bad bodies with 400 naming the field', async () => {
    const cases: Array<[unknown, string, RegExp?]> = [
      [{ events: [{ seq: 30, event_type: 'turn_completed', payload: {} }] }, 'events.0.event_type', /control-plane/],
      [{ events: [{ seq: 30, event_type: 'bogus', payload: {} }] }, 'events.0.event_type'],
      [{ events: [] }, 'events'],
      [events(...Array.from({ length: 101 }, (_, i) => 30 + i)), 'events'],
      [{ events: [{ seq: -1, event_type: 'message', payload: {} }] }, 'events.0.seq'],
      [{ events: [{ seq: 1.5, event_type: 'message', payload: {} }] }, 'events.0.seq'],
      [{ events: [{ seq: 30, event_type: 'message', payload: [] }] }, 'events.0.payload'],
      [{ events: [{ seq: 30, event_type: 'message', payload: { text: 'x'.repeat(256 * 1024) } }] }, 'events.0.payload', /262144/],
      [{ events: [{ seq: 30, event_type: 'message', payload: {}, job_id: 'job_x' }] }, '', /job_id/],
      [{ events: [{ seq: 30, event_type: 'message', payload: {} }, { seq: 30, event_type: 'notice', payload: {} }] }, 'events.1.seq'],
      [{ events: [{ seq: 30, event_type: 'message', payload: {}, is_error: 'yes' }] }, 'events.0.is_error'],
    ];
    for (const [body, field, message] of cases) {
      const res = await post('host-a', attemptId, hostA.credential, body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 100));
      const error = ((await res.json()) as { error: { message: string; param: string | null } }).error;
      if (field) assert.equal(error.param, field);
      if (message) assert.match(error.message, message);
    }
    assert.equal((await post('host-a', attemptId, hostA.credential, '{"events":')).status, 400);
    assert.ok(!(await stored()).some((e) => e.seq >= 30));
  });

  describe('ApiEventSink', () => {
    it('numbers events from 0, batches concurrent emits and resolves once they are stored', async () => {
      const turn = await createTurn(t.db, jobId, 3);
      const attempt = await createAttempt(t.db, { jobId, turnId: turn, hostId: 'host-b' });
      let posts = 0;
      const countingFetch: typeof fetch = (input, init) => {
        posts += 1;
        return fetch(input, init);
      };
      const sink = new ApiEventSink({ apiUrl: api.url, hostId: 'host-b', credential: hostB.credential, attemptId: attempt, fetch: countingFetch });
      await sink.emit('message', { text: 'first' });
      await Promise.all([sink.emit('tool_use', { tool_name: 'shell' }), sink.emit('tool_result', { output: '' }, { isError: true }), sink.emit('notice', {})]);
      const rows = (await stored()).filter((e) => e.attempt_id === attempt);
      assert.deepEqual(rows.map((e) => [e.seq, e.event_type, e.is_error, e.turn_seq]), [
        [0, 'message', false, 3], [1, 'tool_use', false, 3], [2, 'tool_result', true, 3], [3, 'notice', false, 3],
      ]);
      assert.ok(posts < 4, `concurrent emits share a batch (${posts} posts)`);
    });

    it('retries transient failures (a lost response included) without storing twice', async () => {
      const turn = await createTurn(t.db, jobId, 4);
      const attempt = await createAttempt(t.db, { jobId, turnId: turn, hostId: 'host-b' });
      let calls = 0;
      const flakyFetch: typeof fetch = async (input, init) => {
        calls += 1;
        if (calls === 1) throw new TypeError('fetch failed');
        if (calls === 2) {
          await fetch(input, init); // stored, but the answer is lost
          return new Response('{"error":{"message":"bad gateway"}}', { status: 502 });
        }
        return fetch(input, init);
      };
      const sink = new ApiEventSink({ apiUrl: api.url, hostId: 'host-b', credential: hostB.credential, attemptId: attempt, fetch: flakyFetch, sleep: () => Promise.resolve() });
      await sink.emit('retry', { attempt: 1, wait_ms: 500 });
      assert.equal(calls, 3);
      assert.deepEqual((await stored()).filter((e) => e.attempt_id === attempt).map((e) => e.seq), [0]);
    });

    it('throws AttemptFencedError once the attempt is no longer current, for every later emit too', async () => {
      const turn = await createTurn(t.db, jobId, 5);
      const attempt = await createAttempt(t.db, { jobId, turnId: turn, hostId: 'host-b' });
      const sink = new ApiEventSink({ apiUrl: api.url, hostId: 'host-b', credential: hostB.credential, attemptId: attempt });
      await sink.emit('message', { text: 'before' });
      await t.db('agent_attempts').where({ attempt_id: attempt }).update({ state: 'abandoned' });
      await assert.rejects(sink.emit('message', { text: 'after' }), (err: unknown) => err instanceof AttemptFencedError && !err.message.includes(hostB.credential));
      await assert.rejects(sink.emit('message', { text: 'later' }), AttemptFencedError);
      assert.deepEqual((await stored()).filter((e) => e.attempt_id === attempt).map((e) => e.seq), [0]);
    });
  });
});
