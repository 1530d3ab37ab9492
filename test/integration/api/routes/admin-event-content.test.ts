/**
 * `POST /admin/agent/runs/:jobId/events/:eventId/content` over the real API and PostgreSQL
 * (docs/agent-admin.md "Event content"): the payload of one event for an operator, its audit row
 * with every id, the 256 KiB cap with `truncated`, and the refusals (400, 401, 403, 404, 413),
 * none of which writes an audit row. The audit-before-disclose ordering and the 503 are in
 * admin-event-content-audit.test.ts.
 */
import assert from 'node:assert/strict';
import { appendEvents, type NewEvent } from '../../../../agent/events/event-store';
import { EVENT_CONTENT_CAP_BYTES } from '../../../../agent/events/event-content';
import type { AuditRow } from '../../../../agent/audit/audit-query';
import { insertOwner } from '../../../support/agent-rows';
import { createJob, createOwner, type TestOwner } from '../../../support/agent-records';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { postContent, type ContentReply } from '../../../support/event-content';

const SECRET = 'stored-payload-secret-text';
const ACTION = 'agent.run.event_content.read';
/** `{"text":"` and `"}` around the text of a `{text}` payload. */
const WRAP = Buffer.byteLength('{"text":""}');

describe('admin: event content route (PostgreSQL)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let ownerToken: string;
  let operatorId: number;
  let operatorToken: string;
  let jobId: string;
  let otherJobId: string;
  /** Event ids by name. */
  const ev: Record<string, string> = {};

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    owner = await createOwner(t.db);
    ownerToken = api.deps.tokens.issue({ id: owner.userId, role: 'pro' }).access_token;
    operatorId = await insertOwner(t.db, 'content-operator@example.test', { permissions: ['agent.admin'] });
    operatorToken = api.deps.tokens.issue({ id: operatorId, role: 'pro' }).access_token;
    jobId = await createJob(t.db, owner.userId);
    otherJobId = await createJob(t.db, owner.userId);
    const events: Array<[string, NewEvent]> = [
      ['started', { turnSeq: 0, attemptId: null, seq: 0, eventType: 'turn_started', payload: {} }],
      ['message', { turnSeq: 0, attemptId: 'att_content', seq: 3, eventType: 'tool_use', payload: { tool_name: 'shell', input: { cmd: SECRET }, note: 'é✓😀' }, isError: true }],
      // JSON text of exactly the cap: returned whole.
      ['fits', { turnSeq: 1, attemptId: 'att_big', seq: 0, eventType: 'message', payload: { text: 'a'.repeat(EVENT_CONTENT_CAP_BYTES - WRAP) } }],
      // A 4-byte character whose bytes straddle the cap (it starts 2 bytes before it): cut before it.
      ['over', { turnSeq: 1, attemptId: 'att_big', seq: 1, eventType: 'message', payload: { text: `${'a'.repeat(EVENT_CONTENT_CAP_BYTES - 2 - 9)}😀${'b'.repeat(10)}` } }],
    ];
    const stored = await appendEvents(t.db, jobId, events.map(([, e]) => e));
    for (const [i, [name]] of events.entries()) ev[name] = stored[i]!.event_id;
    ev.other = (await appendEvents(t.db, otherJobId, [{ turnSeq: 0, attemptId: 'att_other', seq: 0, eventType: 'message', payload: { text: SECRET } }]))[0]!.event_id;
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const post = (job: string, event: string, options: { token?: string | null; body?: string } = {}): Promise<ContentReply> => postContent(api.url, job, event, options);
  const contentRows = (): Promise<AuditRow[]> => t.db('agent_audit_log').where({ action: ACTION }).orderBy('id', 'asc').select<AuditRow[]>('*');

  it('returns the payload of one event to an operator account and audits the read with every id first', async () => {
    const before = (await contentRows()).length;
    const reply = await post(jobId, ev.message!, { token: operatorToken });
    assert.equal(reply.status, 200, reply.text);
    const payload = { tool_name: 'shell', input: { cmd: SECRET }, note: 'é✓😀' };
    const { created_at: createdAt, ...rest } = reply.body as Record<string, unknown>;
    assert.deepEqual(rest, {
      job_id: jobId, event_id: ev.message, turn_seq: 0, attempt_id: 'att_content', seq: 3, event_type: 'tool_use', is_error: true,
      payload, truncated: false, payload_bytes: Buffer.byteLength(JSON.stringify(payload)),
    });
    assert.ok(!Number.isNaN(Date.parse(createdAt as string)));
    const rows = await contentRows();
    assert.equal(rows.length, before + 1, 'one audit row per read');
    const row = rows.at(-1)!;
    assert.deepEqual(
      [row.category, row.source, row.actor_type, Number(row.actor_user_id), row.actor_ip, row.target_type, row.target_id, row.outcome],
      ['content', 'admin', 'user', operatorId, '127.0.0.1', 'event', ev.message, 'succeeded'],
    );
    assert.deepEqual(row.details, {
      owner_user_id: owner.userId, job_id: jobId, event_id: ev.message, attempt_id: 'att_content', turn_seq: 0, seq: 3,
      event_type: 'tool_use', job_deleted: false, payload_bytes: Buffer.byteLength(JSON.stringify(payload)), truncated: false,
    });
    assert.ok(!JSON.stringify(row).includes(SECRET), 'the audit row names the event, never its content');
  });

  it('names ADMIN_TOKEN as the actor, reads control-plane events without attempt, and canonicalizes the event id', async () => {
    const reply = await post(jobId, `000${ev.started!}`, { body: '{}' });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.event_id, ev.started);
    assert.deepEqual([reply.body.payload, reply.body.attempt_id, reply.body.truncated, reply.body.payload_bytes], [{}, null, false, 2]);
    const row = (await contentRows()).at(-1)!;
    assert.deepEqual([row.actor_type, row.actor_user_id, row.actor_ip, row.target_id], ['admin_token', null, '127.0.0.1', ev.started]);
    assert.deepEqual([row.details.attempt_id, row.details.seq, row.details.event_type], [null, 0, 'turn_started']);
  });

  it('returns a payload of exactly 256 KiB as its value, not truncated', async () => {
    const reply = await post(jobId, ev.fits!);
    assert.equal(reply.status, 200);
    assert.equal(reply.body.truncated, false);
    assert.equal(reply.body.payload_bytes, EVENT_CONTENT_CAP_BYTES);
    assert.deepEqual(reply.body.payload, { text: 'a'.repeat(EVENT_CONTENT_CAP_BYTES - WRAP) });
  });

  it('cuts a longer payload to its leading JSON text at a UTF-8 boundary, with truncated: true', async () => {
    const reply = await post(jobId, ev.over!);
    assert.equal(reply.status, 200);
    const full = JSON.stringify({ text: `${'a'.repeat(EVENT_CONTENT_CAP_BYTES - 2 - 9)}😀${'b'.repeat(10)}` });
    assert.equal(reply.body.truncated, true);
    assert.equal(reply.body.payload_bytes, Buffer.byteLength(full));
    assert.equal(typeof reply.body.payload, 'string');
    const text = reply.body.payload as string;
    assert.equal(Buffer.byteLength(text), EVENT_CONTENT_CAP_BYTES - 2, 'the straddling 4-byte character is dropped whole');
    assert.equal(text, full.slice(0, text.length), 'a prefix of the JSON text');
    assert.ok(!text.includes('\uFFFD') && text.endsWith('a'));
    const row = (await contentRows()).at(-1)!;
    assert.deepEqual([row.details.truncated, row.details.payload_bytes], [true, Buffer.byteLength(full)]);
  });

  it('answers 404 for an unknown run or an event not of that run, and writes no audit row', async () => {
    const before = (await contentRows()).length;
    const unknownRun = await post('job_aaaaaaaaaaaaaaaaaaaa', ev.message!);
    assert.deepEqual([unknownRun.status, unknownRun.body.error?.message], [404, 'Run not found']);
    const otherRun = await post(jobId, ev.other!);
    assert.deepEqual([otherRun.status, otherRun.body.error?.message], [404, 'Event not found in this run']);
    assert.ok(!otherRun.text.includes(SECRET));
    assert.equal((await post(otherJobId, ev.message!)).status, 404);
    assert.equal((await post(jobId, '9223372036854775807')).status, 404, 'the largest id is well-formed');
    assert.equal((await contentRows()).length, before);
  });

  it('answers 400 naming the parameter for a malformed job or event id, and writes no audit row', async () => {
    const before = (await contentRows()).length;
    const badEvents = ['abc', '-1', '1.5', '1e3', '0x10', '0', '9223372036854775808', '9'.repeat(30), '%201', `${ev.message!}%00`, '%ED%A0%80'];
    for (const bad of badEvents) {
      const reply = await post(jobId, bad);
      assert.equal(reply.status, 400, `event id ${bad}: ${reply.text}`);
      assert.equal(reply.body.error?.param, 'eventId', bad);
    }
    for (const bad of ['nope', 'job_AAAAAAAAAAAAAAAAAAAA', `${jobId}x`, 'x'.repeat(5000), `${jobId}%00`]) {
      const reply = await post(bad, ev.message!);
      assert.equal(reply.status, 400, `job id ${bad.slice(0, 30)}: ${reply.text}`);
      assert.equal(reply.body.error?.param, 'jobId');
    }
    assert.equal((await contentRows()).length, before);
  });

  it('takes an empty body or {} only: any other body is 400, a large one 413, and nothing is audited', async () => {
    const before = (await contentRows()).length;
    for (const body of ['{"reason":"x"}', '[]', 'null', '"str"', '0', '{', ' ', '{"__proto__":{}}']) {
      const reply = await post(jobId, ev.message!, { body });
      assert.equal(reply.status, 400, `body ${body}: ${reply.text}`);
      assert.ok(!reply.text.includes(SECRET));
    }
    assert.equal((await post(jobId, ev.message!, { body: `{${' '.repeat(2048)}}` })).status, 413);
    assert.equal((await contentRows()).length, before);
    assert.equal((await post(jobId, ev.message!, { body: ' { } ' })).status, 200, 'whitespace around {} is JSON {}');
  });

  it('is for operators only: 401 anonymous or wrong, 403 for the owner (token or API key), nothing audited', async () => {
    const before = (await contentRows()).length;
    assert.equal((await post(jobId, ev.message!, { token: null })).status, 401);
    assert.equal((await post(jobId, ev.message!, { token: 'wrong-token' })).status, 401);
    for (const token of [ownerToken, owner.apiKey]) {
      const reply = await post(jobId, ev.message!, { token });
      assert.equal(reply.status, 403);
      assert.ok(!reply.text.includes(SECRET));
    }
    assert.equal((await contentRows()).length, before);
    assert.equal(api.routes.find((r) => r.path === '/admin/agent/runs/:jobId/events/:eventId/content')?.access, 'operator');
  });

  it('reads a soft-deleted chat and says so in the audit row', async () => {
    await t.db('agent_jobs').where({ job_id: otherJobId }).update({ deleted_at: t.db.fn.now() });
    const reply = await post(otherJobId, ev.other!);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body.payload, { text: SECRET });
    assert.equal((await contentRows()).at(-1)!.details.job_deleted, true);
  });
});
