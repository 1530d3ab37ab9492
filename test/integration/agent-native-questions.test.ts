/**
 * Native questions through the real API on real PostgreSQL (docs/agent-drivers.md "Native
 * questions"): a host's `question` event opens the question; the owner lists and answers it naming
 * job, attempt and request id; the host runner's HostQuestionChannel sees the answer. Refused: other
 * owners (404), unknown questions (404), answers naming no asked question or bad text (400), a second
 * answer and an attempt that ended or was replaced (409), a malformed question event (400).
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { ApiEventSink } from '../../activities/agent/api-event-sink';
import { HostApiClient } from '../../activities/agent/host-api-client';
import { HostQuestionChannel } from '../../activities/agent/question-channel';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createAttempt, createJob, createOwner, createTurn, type TestOwner } from '../support/agent-records';
import { listEvents } from '../../agent/events/event-store';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

const QUESTIONS = [
  { id: 'database', header: 'Database', question: 'Which database should the service use?', multi_select: false, options: [{ label: 'Postgres', description: 'Relational' }, { label: 'SQLite', description: 'Embedded' }] },
  { id: 'language', header: 'Language', question: 'Which language?', multi_select: true, options: [] },
];

describe('native questions: the owner answer route and the host channel', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let api: TestApi;
  let host: { hostId: string; credential: string };
  let owner: TestOwner;
  let other: TestOwner;
  let jobId: string;
  let turnId: string;
  let attemptId: string;
  let seq = 0;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    host = await enrollHost(t.db, 'host-q');
    owner = await createOwner(t.db);
    other = await createOwner(t.db);
    jobId = await createJob(t.db, owner.userId);
    turnId = await createTurn(t.db, jobId, 1);
    attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-q' });
  });
  after(async () => {
    await api.close();
    await t.drop();
  });

  const hostPost = (attempt: string, body: unknown) => fetch(`${api.url}/v1/agent/hosts/host-q/attempts/${attempt}/events`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${host.credential}` }, body: JSON.stringify(body),
  });
  const ask = (attempt: string, requestId: string, questions: unknown = QUESTIONS) => hostPost(attempt, { events: [{ seq: seq++, event_type: 'question', payload: { request_id: requestId, cli: 'codex', questions } }] });
  const answer = (requestId: string, body: unknown, options: { attempt?: string; job?: string; key?: string; raw?: string } = {}) =>
    fetch(`${api.url}/v1/agent/jobs/${options.job ?? jobId}/attempts/${options.attempt ?? attemptId}/questions/${encodeURIComponent(requestId)}/answer`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${options.key ?? owner.apiKey}` }, body: options.raw ?? JSON.stringify(body),
    });
  const list = async (query = '', key = owner.apiKey): Promise<Response> => fetch(`${api.url}/v1/agent/jobs/${jobId}/questions${query}`, { headers: { authorization: `Bearer ${key}` } });
  const errorOf = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;
  const client = () => new HostApiClient({ apiUrl: api.url, hostId: host.hostId, credential: host.credential });

  it('a question event opens the question; the owner sees it pending and answers it; the host reads the answer once', async () => {
    assert.equal((await ask(attemptId, 'rq-1')).status, 200);
    const events = await listEvents(t.db, jobId, 0, 100);
    assert.deepEqual(events.map((e) => e.event_type), ['question']);
    const pending = (await (await list('?pending=true')).json()) as { questions: Json[] };
    assert.equal(pending.questions.length, 1);
    assert.deepEqual(
      { ...pending.questions[0], created_at: undefined },
      { job_id: jobId, turn_seq: 1, attempt_id: attemptId, request_id: 'rq-1', cli: 'codex', questions: QUESTIONS, state: 'pending', answers: null, message: null, created_at: undefined, answered_at: null },
    );
    assert.deepEqual(await client().questionState(attemptId, 'rq-1'), { state: 'pending', answers: null, message: null });

    const res = await answer('rq-1', { answers: { database: ['SQLite'], language: ['Go', 'Zig'] } });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as Json).state, 'answered');
    assert.deepEqual(await client().questionState(attemptId, 'rq-1'), { state: 'answered', answers: { database: ['SQLite'], language: ['Go', 'Zig'] }, message: null });
    assert.deepEqual(((await (await list('?pending=true')).json()) as { questions: Json[] }).questions, [], 'no longer pending');

    const again = await answer('rq-1', { answers: { database: ['Postgres'] } });
    assert.equal(again.status, 409);
    assert.match(await errorOf(again), /already answered/);
    const expired = await client().expireQuestion(attemptId, 'rq-1');
    assert.equal(expired.state, 'answered', 'an answer that came first wins over the host giving up');
  });

  it('refuses bad answers with 400 and changes nothing; other owners and unknown questions get 404', async () => {
    assert.equal((await ask(attemptId, 'rq-2')).status, 200);
    const cases: Array<[unknown, RegExp]> = [
      [{ answers: { nope: ['x'] } }, /no question with id "nope"/],
      [{ answers: {} }, /answer at least one question/],
      [{ answers: { database: [] } }, /answers/],
      [{ answers: { database: ['x'] }, decline: true }, /./],
      [{ decline: false }, /./],
      [{ answers: { database: ['x'.repeat(5000)] } }, /./],
    ];
    for (const [body, message] of cases) {
      const res = await answer('rq-2', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(await errorOf(res), message);
    }
    const nul = await answer('rq-2', undefined, { raw: '{"answers":{"database":["a\\u0000b"]}}' });
    assert.equal(nul.status, 400, 'a NUL in an answer');
    const deep = await answer('rq-2', undefined, { raw: `${'['.repeat(5000)}${']'.repeat(5000)}` });
    assert.equal(deep.status, 400, 'deep JSON');
    assert.equal((await answer('rq-2', { answers: { database: ['x'] } }, { key: other.apiKey })).status, 404, 'another owner');
    assert.equal((await list('', other.apiKey)).status, 404, "another owner's list");
    assert.equal((await answer('rq-unknown', { answers: { database: ['x'] } })).status, 404);
    assert.equal((await answer('rq-2', { answers: { database: ['x'] } }, { attempt: 'att_nothere' })).status, 404);
    assert.equal((await client().questionState(attemptId, 'rq-2')).state, 'pending', 'nothing changed');
  });

  it('a decline reaches the host with its message', async () => {
    const res = await answer('rq-2', { decline: true, message: 'Pick one yourself.' });
    assert.equal(res.status, 200);
    assert.deepEqual(await client().questionState(attemptId, 'rq-2'), { state: 'declined', answers: null, message: 'Pick one yourself.' });
  });

  it('refuses a malformed question event with 400, writing nothing', async () => {
    const before = (await listEvents(t.db, jobId, 0, 100)).length;
    for (const questions of [[], [{ id: 'a', header: '', question: '', multi_select: false, options: [] }], [QUESTIONS[0], QUESTIONS[0]], 'x']) {
      const res = await ask(attemptId, 'rq-bad', questions);
      assert.equal(res.status, 400, JSON.stringify(questions));
    }
    assert.equal((await listEvents(t.db, jobId, 0, 100)).length, before);
    assert.equal(await t.db('agent_native_questions').where({ request_id: 'rq-bad' }).first(), undefined);
  });

  it('the host channel: question event, the owner answers while it waits, a notice; at its limit it expires the question', async () => {
    const sink = new ApiEventSink({ apiUrl: api.url, hostId: host.hostId, credential: host.credential, attemptId });
    // The sink numbers from 0: keep clear of the seqs written above.
    for (let i = 0; i < seq; i += 1) await sink.emit('notice', { kind: 'filler' });
    const channel = new HostQuestionChannel({ api: client(), attemptId, events: sink, deadline: Date.now() + 60_000, pollMs: 50, marginMs: 0 });
    const waiting = channel.ask({ requestId: 'rq-3', cli: 'claude-code', questions: [QUESTIONS[0]!] }, new AbortController().signal);
    await waitFor(async () => (await t.db('agent_native_questions').where({ request_id: 'rq-3' }).first<Json | undefined>()), 'the question opened');
    assert.equal((await answer('rq-3', { answers: { database: ['Postgres'] } })).status, 200);
    assert.deepEqual(await waiting, { kind: 'answered', answers: { database: ['Postgres'] } });

    const short = new HostQuestionChannel({ api: client(), attemptId, events: sink, deadline: Date.now() + 300, pollMs: 50, marginMs: 0 });
    const reply = await short.ask({ requestId: 'rq-4', cli: 'claude-code', questions: [QUESTIONS[0]!] }, new AbortController().signal);
    assert.equal(reply.kind, 'unanswered');
    assert.equal((await client().questionState(attemptId, 'rq-4')).state, 'expired');
    const late = await answer('rq-4', { answers: { database: ['SQLite'] } });
    assert.equal(late.status, 409);
    const notices = (await listEvents(t.db, jobId, 0, 1000)).filter((e) => e.event_type === 'notice' && (e.payload as Json).request_id !== undefined);
    assert.deepEqual(notices.map((e) => e.payload), [{ kind: 'question_answered', request_id: 'rq-3' }, { kind: 'question_unanswered', request_id: 'rq-4' }]);
  });

  it('an attempt that ended or was replaced refuses the answer with 409 and its question lists as expired', async () => {
    assert.equal((await ask(attemptId, 'rq-5')).status, 200);
    await t.db('agent_attempts').where({ attempt_id: attemptId }).update({ state: 'abandoned' });
    const newAttempt = await createAttempt(t.db, { jobId, turnId, hostId: 'host-q' });
    const res = await answer('rq-5', { answers: { database: ['SQLite'] } });
    assert.equal(res.status, 409);
    assert.match(await errorOf(res), /Attempt is not current/);
    const all = ((await (await list()).json()) as { questions: Json[] }).questions;
    assert.equal(all.find((q) => q.request_id === 'rq-5')?.state, 'expired');
    assert.equal((await t.db('agent_native_questions').where({ request_id: 'rq-5' }).first<{ state: string } | undefined>())?.state, 'pending', 'the row itself is untouched');
    await assert.rejects(client().questionState(attemptId, 'rq-5'), { name: 'AttemptNotCurrent' });
    const viaNew = await answer('rq-5', { answers: { database: ['SQLite'] } }, { attempt: newAttempt });
    assert.equal(viaNew.status, 404, 'naming the replacing attempt does not reach the replaced attempt’s question');
  });
});
