/**
 * Event content is audited before it is returned (docs/agent-admin.md "Event
 * content"), over the real API and PostgreSQL: while the audit table is locked the request waits
 * and nothing is answered, and when the audit insert fails the answer is 503 with no payload.
 */
import assert from 'node:assert/strict';
import { appendEvents } from '../../../../agent/events/event-store';
import { createJob, createOwner } from '../../../support/agent-records';
import { startTestApi, type TestApi } from '../../../support/api';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { postContent, type ContentReply } from '../../../support/event-content';
import { waitFor } from '../../../support/wait';

const SECRET = 'audited-payload-secret-text';
const ACTION = 'agent.run.event_content.read';

describe('admin: event content is audited before it is disclosed (PostgreSQL)', () => {
  let t: TestDatabase;
  let api: TestApi;
  let jobId: string;
  let eventId: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    const owner = await createOwner(t.db);
    jobId = await createJob(t.db, owner.userId);
    const [stored] = await appendEvents(t.db, jobId, [{ turnSeq: 0, attemptId: 'att_audit', seq: 0, eventType: 'message', payload: { text: SECRET } }]);
    eventId = stored!.event_id;
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const auditRows = async (): Promise<number> => Number((await t.db('agent_audit_log').where({ action: ACTION }).count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
  /** Backends waiting for a lock on agent_audit_log. */
  const waitingOnAudit = async (): Promise<number> => Number((await t.db.raw<{ rows: Array<{ n: string }> }>(
    `select count(*) as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'agent_audit_log' and not l.granted`,
  )).rows[0]!.n);

  it('holds the answer until the audit row is written: nothing arrives while the audit table is locked', async () => {
    const before = await auditRows();
    const trx = await t.db.transaction();
    let answered = false;
    let reply: Promise<ContentReply>;
    try {
      await trx.raw('lock table agent_audit_log in share mode');
      reply = postContent(api.url, jobId, eventId).finally(() => { answered = true; });
      await waitFor(async () => (await waitingOnAudit()) > 0, 'the API to wait on the audit table');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(answered, false, 'no answer while the audit row cannot be written');
    } finally {
      await trx.commit();
    }
    const done = await reply;
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body.payload, { text: SECRET });
    assert.equal(await auditRows(), before + 1);
  });

  it('answers 503 and discloses nothing when the audit insert fails, then reads again once it works', async () => {
    await t.db.raw(`
      create function refuse_content_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store refuses'; end $$;
      create trigger refuse_content_audit before insert on agent_audit_log for each row when (new.action = '${ACTION}') execute function refuse_content_audit();
    `);
    const before = await auditRows();
    try {
      const reply = await postContent(api.url, jobId, eventId);
      assert.equal(reply.status, 503, reply.text);
      assert.equal(reply.body.error?.message, 'The audit log could not be written, so nothing was disclosed; try again later');
      assert.ok(!reply.text.includes(SECRET), 'no payload in the body');
      assert.deepEqual(Object.keys(reply.body), ['error']);
      assert.ok(!reply.text.includes('audit store refuses'), 'the database error stays in the log');
      assert.equal(await auditRows(), before);
    } finally {
      await t.db.raw('drop trigger refuse_content_audit on agent_audit_log; drop function refuse_content_audit()');
    }
    const again = await postContent(api.url, jobId, eventId);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.payload, { text: SECRET });
    assert.equal(await auditRows(), before + 1);
  });
});
