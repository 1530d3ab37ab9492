/**
 * The operator's run activity view (`GET /admin/agent/runs/:jobId/activity`) on real PostgreSQL:
 * envelopes in execution order without payload content, tool names lifted for tool events only,
 * attempt filter, cursor paging, limits (default 100), and operator-only access.
 */
import assert from 'node:assert/strict';
import { appendEvents, type NewEvent } from '../../agent/events/event-store';
import type { ActivityPage } from '../../agent/events/activity-view';
import { startTestApi, type TestApi } from '../support/api';
import { ADMIN_TOKEN } from '../support/admin';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createJob, createOwner, type TestOwner } from '../support/agent-records';

describe('operator run activity view', () => {
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let jobId: string;

  const SECRET = 'payload-secret-text';

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    owner = await createOwner(t.db);
    jobId = await createJob(t.db, owner.userId);
    const events: NewEvent[] = [
      { turnSeq: 0, attemptId: null, seq: 0, eventType: 'turn_started', payload: {} },
      { turnSeq: 0, attemptId: 'att_one', seq: 0, eventType: 'message', payload: { text: SECRET, name: 'not-a-tool' } },
      { turnSeq: 0, attemptId: 'att_one', seq: 1, eventType: 'tool_use', payload: { tool_name: 'shell', tool_use_id: 'tu_1', input: { cmd: SECRET } } },
      { turnSeq: 0, attemptId: 'att_one', seq: 2, eventType: 'tool_result', payload: { tool_use_id: 'tu_1', output: SECRET }, isError: true },
    ];
    for (let seq = 0; seq < 5; seq += 1) events.push({ turnSeq: 1, attemptId: 'att_two', seq, eventType: 'message', payload: { text: SECRET } });
    await appendEvents(t.db, jobId, events);
  });
  after(async () => {
    await api.close();
    await t.drop();
  });

  const get = async (query = '', token: string | null = ADMIN_TOKEN, job = jobId) => {
    const res = await fetch(`${api.url}/admin/agent/runs/${job}/activity${query}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as ActivityPage & { error?: { param: string | null } } };
  };

  it('lists envelopes in execution order with no payload content', async () => {
    const { status, text, body } = await get();
    assert.equal(status, 200);
    assert.ok(!text.includes(SECRET), 'no payload content in the view');
    assert.equal(body.next_cursor, null);
    assert.deepEqual(body.events.map((e) => [e.turn_seq, e.attempt_id, e.seq, e.event_type]), [
      [0, null, 0, 'turn_started'], [0, 'att_one', 0, 'message'], [0, 'att_one', 1, 'tool_use'], [0, 'att_one', 2, 'tool_result'],
      [1, 'att_two', 0, 'message'], [1, 'att_two', 1, 'message'], [1, 'att_two', 2, 'message'], [1, 'att_two', 3, 'message'], [1, 'att_two', 4, 'message'],
    ]);
    const [started, message, toolUse, toolResult] = body.events;
    assert.deepEqual(Object.keys(started!).sort(), ['attempt_id', 'created_at', 'event_id', 'event_type', 'has_content', 'is_error', 'seq', 'turn_seq']);
    assert.equal(started!.has_content, false);
    assert.equal(message!.has_content, true);
    assert.equal(message!.tool_name, undefined, 'tool fields only on tool events');
    assert.equal(toolUse!.tool_name, 'shell');
    assert.equal(toolUse!.tool_use_id, 'tu_1');
    assert.equal(toolResult!.tool_use_id, 'tu_1');
    assert.equal(toolResult!.is_error, true);
    assert.equal(toolUse!.is_error, false);
  });

  it('pages with cursor and limit, and filters by attempt', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await get(`?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      assert.ok(page.body.events.length <= 4);
      seen.push(...page.body.events.map((e) => e.event_id));
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor !== null);
    assert.equal(pages, 3);
    assert.deepEqual(seen, (await get()).body.events.map((e) => e.event_id));
    const two = await get('?attempt_id=att_two&limit=3');
    assert.deepEqual(two.body.events.map((e) => e.seq), [0, 1, 2]);
    assert.ok(two.body.next_cursor);
    const rest = await get(`?attempt_id=att_two&limit=3&cursor=${two.body.next_cursor}`);
    assert.deepEqual(rest.body.events.map((e) => e.seq), [3, 4]);
    assert.equal(rest.body.next_cursor, null);
  });

  it('refuses limits outside 1..200 and bad cursors with 400, unknown runs with 404', async () => {
    for (const [query, param] of [['?limit=0', 'limit'], ['?limit=201', 'limit'], ['?limit=x', 'limit'], ['?cursor=abc', 'cursor']] as const) {
      const res = await get(query);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error?.param, param);
    }
    assert.equal((await get('?limit=200')).status, 200);
    assert.equal((await get('', ADMIN_TOKEN, 'job_aaaaaaaaaaaaaaaaaaaa')).status, 404);
  });

  it('returns 100 envelopes per page when no limit is given', async () => {
    const longJob = await createJob(t.db, owner.userId);
    await appendEvents(t.db, longJob, Array.from({ length: 101 }, (_, seq): NewEvent => ({ turnSeq: 0, attemptId: 'att_long', seq, eventType: 'message', payload: {} })));
    const first = await get('', ADMIN_TOKEN, longJob);
    assert.equal(first.status, 200);
    assert.equal(first.body.events.length, 100, 'default limit 100');
    assert.notEqual(first.body.next_cursor, null);
    const rest = await get(`?cursor=${first.body.next_cursor}`, ADMIN_TOKEN, longJob);
    assert.deepEqual(rest.body.events.map((e) => e.seq), [100]);
  });

  it('is for operators only', async () => {
    assert.equal((await get('', null)).status, 401);
    assert.equal((await get('', 'wrong-token')).status, 401);
    assert.equal((await get('', owner.apiKey)).status, 403, 'an owner API key is a known caller without the operator right');
  });
});
