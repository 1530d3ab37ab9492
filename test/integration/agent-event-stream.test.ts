/**
 * The owner's job event stream end to end: real API over HTTP, real PostgreSQL, LISTEN/NOTIFY.
 * Backlog and live events, resume without gap or duplicate, owner scoping, closing once the job
 * has no active turn, keep-alive comments, and releasing the subscription on disconnect.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { captureLogs } from '../support/logs';
import { streamJobEvents } from '../../api/sse/event-stream';
import { connectionSettingsOf, createEventNotifier } from '../../agent/events/event-notifier';
import { appendEvents, type NewEvent, type StoredEvent } from '../../agent/events/event-store';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createJob, createOwner, createTurn, type TestOwner } from '../support/agent-records';
import { SseReader } from '../support/sse-reader';
import { waitFor } from '../support/wait';

describe('owner job event stream (SSE)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let stranger: TestOwner;
  const clients: AbortController[] = [];

  before(async () => {
    t = await freshDatabase();
    // A short keep-alive interval: idle streams write comments and recheck the job's activity often.
    api = await startTestApi({ db: t.db, env: { AGENT_EVENT_STREAM_HEARTBEAT_SECONDS: '0.3' } });
    owner = await createOwner(t.db);
    stranger = await createOwner(t.db);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.abort();
  });
  after(async () => {
    await api.close();
    await t.drop();
  });

  const messages = (from: number, count: number, turnSeq = 0): NewEvent[] =>
    Array.from({ length: count }, (_, i) => ({ turnSeq, attemptId: null, seq: from + i, eventType: 'message' as const, payload: { text: `m${from + i}` } }));

  const open = async (jobId: string, options: { key?: string | null; lastEventId?: string; query?: string } = {}) => {
    const controller = new AbortController();
    clients.push(controller);
    const headers: Record<string, string> = {};
    const key = options.key === undefined ? owner.apiKey : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const res = await fetch(`${api.url}/v1/agent/jobs/${jobId}/events${options.query ?? ''}`, { headers, signal: controller.signal });
    return { res, controller };
  };
  const stream = async (jobId: string, options: { lastEventId?: string; query?: string } = {}) => {
    const { res, controller } = await open(jobId, options);
    if (res.status !== 200) assert.fail(`stream answered ${res.status}: ${await res.text()}`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    return { reader: new SseReader(res), controller };
  };
  const parsed = (reader: SseReader) => reader.events.filter((f) => f.id !== undefined).map((f) => JSON.parse(f.data!) as StoredEvent);

  it('sends the backlog, then live events, each with its id, type and stored event', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0);
    const backlog = await appendEvents(t.db, jobId, messages(0, 3));
    const { reader, controller } = await stream(jobId);
    await reader.waitForEvents(3);
    const live = await appendEvents(t.db, jobId, [...messages(3, 1), { turnSeq: 0, attemptId: 'att_x', seq: 0, eventType: 'tool_use', payload: { tool_name: 'shell' }, isError: true }]);
    await reader.waitForEvents(5);
    assert.deepEqual(parsed(reader), [...backlog, ...live]);
    const frame = reader.events[4]!;
    assert.equal(frame.id, live[1]!.event_id);
    assert.equal(frame.event, 'tool_use');
    assert.equal(reader.ended, false, 'the stream stays open while a turn runs');
    controller.abort();
  });

  it('resumes from Last-Event-ID or ?after= with exactly the rest, and follows on', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0);
    const all = await appendEvents(t.db, jobId, messages(0, 5));
    const fromHeader = await stream(jobId, { lastEventId: all[1]!.event_id });
    const fromQuery = await stream(jobId, { query: `?after=${all[3]!.event_id}` });
    await fromHeader.reader.waitForEvents(3);
    await fromQuery.reader.waitForEvents(1);
    const more = await appendEvents(t.db, jobId, messages(5, 2));
    await fromHeader.reader.waitForEvents(5);
    await fromQuery.reader.waitForEvents(3);
    assert.deepEqual(parsed(fromHeader.reader), [...all.slice(2), ...more]);
    assert.deepEqual(parsed(fromQuery.reader), [all[4], ...more]);
  });

  it('pages a large backlog in order', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0, 'completed');
    const all = await appendEvents(t.db, jobId, messages(0, 450));
    const { reader } = await stream(jobId);
    await reader.waitForEnd();
    assert.deepEqual(parsed(reader).map((e) => e.event_id), all.map((e) => e.event_id));
    assert.equal(reader.frames[reader.frames.length - 1]!.event, 'end');
  });

  it('closes after the backlog once the job has no queued or running turn', async () => {
    const jobId = await createJob(t.db, owner.userId);
    const first = await createTurn(t.db, jobId, 0);
    const second = await createTurn(t.db, jobId, 1, 'queued');
    await appendEvents(t.db, jobId, messages(0, 2));
    const { reader } = await stream(jobId);
    await reader.waitForEvents(2);
    await t.db('agent_turns').where({ turn_id: first }).update({ state: 'completed' });
    await waitFor(() => reader.frames.some((f) => f.comments.includes('keep-alive')), 'a keep-alive comment');
    assert.equal(reader.ended, false, 'a queued turn keeps the stream open');
    await t.db('agent_turns').where({ turn_id: second }).update({ state: 'cancelled' });
    await reader.waitForEnd();
    assert.deepEqual(JSON.parse(reader.frames[reader.frames.length - 1]!.data!), { job_active: false });
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 0, 'the subscription to be released');
  });

  it('closes the connection after the end frame when the client asked for Connection: close', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0, 'completed');
    await appendEvents(t.db, jobId, messages(0, 2));
    const { hostname, port } = new URL(api.url);
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(`GET /v1/agent/jobs/${jobId}/events HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${owner.apiKey}\r\nconnection: close\r\n\r\n`);
    // The server keeps idle connections for 65 s: a close well before that is the server honouring the request.
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 20_000))]);
    socket.destroy();
    assert.equal(outcome, 'closed');
    const text = Buffer.concat(chunks).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.match(text, /event: end/);
  });

  it('sends events committed with the last turn\'s end before closing', async () => {
    const jobId = await createJob(t.db, owner.userId);
    const turn = await createTurn(t.db, jobId, 0);
    const { reader } = await stream(jobId);
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 1, 'the stream to subscribe');
    const finished = await t.db.transaction(async (trx) => {
      await trx('agent_turns').where({ turn_id: turn }).update({ state: 'completed' });
      return appendEvents(trx, jobId, [{ turnSeq: 0, attemptId: null, seq: 0, eventType: 'turn_completed', payload: {} }]);
    });
    await reader.waitForEnd();
    assert.deepEqual(parsed(reader), finished);
  });

  it('releases the subscription when the client disconnects', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0);
    const a = await stream(jobId);
    const b = await stream(jobId);
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 2, 'two subscriptions');
    a.controller.abort();
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 1, 'one subscription after a disconnect');
    b.controller.abort();
    await waitFor(() => api.deps.events?.subscriberCount(jobId) === 0, 'no subscription after both disconnect');
  });

  it('waits for a slow client instead of buffering the backlog', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0, 'completed');
    const payloadBytes = 100 * 1024;
    const count = 150;
    for (let from = 0; from < count; from += 50) {
      await appendEvents(t.db, jobId, Array.from({ length: 50 }, (_, i) => ({ turnSeq: 0, attemptId: null, seq: from + i, eventType: 'message' as const, payload: { text: 'x'.repeat(payloadBytes) } })));
    }
    // The stream itself behind a bare server, so the test can watch what the server has buffered.
    let response: ServerResponse | undefined;
    const notifier = createEventNotifier({ connection: connectionSettingsOf(t.db), log: captureLogs('notifier').log });
    const server = createServer((_req, res) => {
      response = res;
      void streamJobEvents({ res, db: t.db, notifier, jobId, afterEventId: '0', heartbeatMs: 60_000, log: captureLogs('stream').log });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.pause();
      socket.write('GET / HTTP/1.1\r\nHost: test\r\n\r\n');
      await waitFor(() => response?.writableNeedDrain, 'the server to wait for the paused client');
      const buffered: number[] = [response!.writableLength];
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        buffered.push(response!.writableLength);
        received += chunk;
      });
      const ended = new Promise<void>((resolve) => socket.on('end', resolve));
      socket.resume();
      await ended;
      socket.destroy();
      assert.equal(received.match(/^id: /gm)?.length, count, 'every event arrives');
      const bound = response!.writableHighWaterMark + payloadBytes + 1024;
      assert.ok(Math.max(...buffered) <= bound, `the server buffered at most one frame past its high-water mark (max ${Math.max(...buffered)} bytes)`);
    } finally {
      server.closeAllConnections();
      server.close();
      await notifier.close();
    }
  });

  it('answers 401 without credentials, 404 for another owner\'s or an unknown job, 400 for a bad resume point', async () => {
    const jobId = await createJob(t.db, owner.userId);
    await createTurn(t.db, jobId, 0);
    const expectStatus = async (status: number, options: Parameters<typeof open>[1], job = jobId) => {
      const { res } = await open(job, options);
      assert.equal(res.status, status);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      return ((await res.json()) as { error: { message: string; param: string | null } }).error;
    };
    await expectStatus(401, { key: null });
    await expectStatus(401, { key: 'sk_not_a_key' });
    assert.equal((await expectStatus(404, { key: stranger.apiKey })).message, 'Job not found');
    await expectStatus(404, {}, 'job_aaaaaaaaaaaaaaaaaaaa');
    await expectStatus(403, { key: (await createOwner(t.db, [])).apiKey });
    assert.equal((await expectStatus(400, { query: '?after=abc' })).param, 'after');
    assert.equal((await expectStatus(400, { query: '?after=-1' })).param, 'after');
    assert.equal((await expectStatus(400, { lastEventId: '1e3' })).param, 'Last-Event-ID');
  });
});
