/**
 * The agent event log on real PostgreSQL: ordered visibility under concurrent writers, idempotent
 * appends, and the LISTEN notifier (fan-out, reconnect, polling while disconnected).
 */
import assert from 'node:assert/strict';
import { createDb, type Db } from '../../lib/db';
import { appendEvents, listEvents, type NewEvent, type StoredEvent } from '../../agent/events/event-store';
import { connectionSettingsOf, createEventNotifier, type EventNotifier } from '../../agent/events/event-notifier';
import { enrollHost } from '../../agent/hosts/host-registry';
import { captureLogs } from '../support/logs';
import { freshDatabase, type TestDatabase } from '../support/db';
import { createAttempt, createJob, createOwner, createTurn } from '../support/agent-records';
import { waitFor } from '../support/wait';

const message = (seq: number, attemptId: string | null, turnSeq = 0): NewEvent => ({
  turnSeq, attemptId, seq, eventType: 'message', payload: { text: `m${seq}` },
});

describe('agent event store', () => {
  let t: TestDatabase;
  let db: Db;
  let jobId: string;
  let attemptId: string;

  before(async () => {
    t = await freshDatabase();
    // Writers and the reader each need a connection at once.
    db = createDb({ url: t.url, poolMax: 8, applicationName: 'event-store-test' });
    const owner = await createOwner(db);
    await enrollHost(db, 'host-es');
    jobId = await createJob(db, owner.userId);
    const turnId = await createTurn(db, jobId, 0);
    attemptId = await createAttempt(db, { jobId, turnId, hostId: 'host-es' });
  });
  after(async () => {
    await db.destroy();
    await t.drop();
  });

  it('shows a reader every event of 5 concurrent writers exactly once, ids strictly increasing', async () => {
    const concurrentJob = await createJob(db, (await createOwner(db)).userId);
    const writers = 5;
    const perWriter = 40;
    let writing = true;
    const write = async (writer: number) => {
      for (let i = 0; i < perWriter; i += 2) {
        const batch = [i, i + 1].map((n) => ({ ...message(writer * 1000 + n, null), dedupeKey: `w${writer}:${n}` }));
        if (writer % 2 === 0) {
          await appendEvents(db, concurrentJob, batch);
        } else {
          // A writer whose transaction keeps working after the append commits later than its ids were taken.
          await db.transaction(async (trx) => {
            await appendEvents(trx, concurrentJob, batch);
            await trx.raw('select pg_sleep(0.002)');
          });
        }
      }
    };
    const seen: StoredEvent[] = [];
    const read = async () => {
      let last = '0';
      while (writing || seen.length < writers * perWriter) {
        // Whether writers were still at work when this read began: an empty page ends the reading
        // only if the read started after the last commit (a read begun earlier may miss it).
        const afterWriters = !writing;
        const page = await listEvents(db, concurrentJob, last, 37);
        seen.push(...page);
        if (page.length > 0) last = page[page.length - 1]!.event_id;
        if (afterWriters && page.length === 0) break;
      }
    };
    const reader = read();
    await Promise.all(Array.from({ length: writers }, (_, w) => write(w)));
    writing = false;
    await reader;

    assert.equal(seen.length, writers * perWriter);
    const ids = seen.map((e) => BigInt(e.event_id));
    for (let i = 1; i < ids.length; i += 1) assert.ok(ids[i]! > ids[i - 1]!, `event ids increase at index ${i}`);
    assert.equal(new Set(seen.map((e) => e.seq)).size, writers * perWriter, 'every event exactly once');
    const all = await listEvents(db, concurrentJob, 0, 1000);
    assert.deepEqual(all.map((e) => e.event_id), seen.map((e) => e.event_id), 'no event appeared behind the reader');
  });

  it('stores a repeated dedupe key once and returns nothing for it', async () => {
    const first = await appendEvents(db, jobId, [message(0, attemptId), message(1, attemptId)]);
    assert.deepEqual(first.map((e) => e.seq), [0, 1]);
    assert.match(first[0]!.event_id, /^\d+$/);
    assert.equal(first[0]!.attempt_id, attemptId);
    assert.equal(first[0]!.is_error, false);
    assert.ok(!Number.isNaN(Date.parse(first[0]!.created_at)));
    const again = await appendEvents(db, jobId, [message(1, attemptId), message(2, attemptId)]);
    assert.deepEqual(again.map((e) => e.seq), [2]);
    assert.deepEqual((await listEvents(db, jobId, 0, 100)).map((e) => e.seq), [0, 1, 2]);
    assert.deepEqual((await listEvents(db, jobId, first[1]!.event_id, 100)).map((e) => e.seq), [2]);
    // A control-plane event of the same turn and seq is a different event.
    const control = await appendEvents(db, jobId, [{ turnSeq: 0, attemptId: null, seq: 0, eventType: 'turn_started', payload: {} }]);
    assert.equal(control.length, 1);
  });

  it('writes nothing when the surrounding transaction rolls back', async () => {
    const before = (await listEvents(db, jobId, 0, 1000)).length;
    await assert.rejects(db.transaction(async (trx) => {
      await appendEvents(trx, jobId, [message(50, attemptId)]);
      throw new Error('rolled back');
    }), /rolled back/);
    assert.equal((await listEvents(db, jobId, 0, 1000)).length, before);
  });

  describe('notifier', () => {
    let notifier: EventNotifier;
    before(() => {
      notifier = createEventNotifier({ connection: connectionSettingsOf(db), log: captureLogs('notifier').log, minBackoffMs: 50 });
    });
    after(() => notifier.close());

    it('wakes the subscribers of the job that got events, and counts subscriptions', async () => {
      const otherJob = await createJob(db, (await createOwner(db)).userId);
      let wakes = 0;
      let otherWakes = 0;
      const unsubscribe = notifier.subscribe(jobId, () => { wakes += 1; });
      const unsubscribeOther = notifier.subscribe(otherJob, () => { otherWakes += 1; });
      assert.equal(notifier.subscriberCount(), 2);
      assert.equal(notifier.subscriberCount(jobId), 1);
      await waitFor(() => notifier.listening, 'the LISTEN connection');
      const before = { wakes, otherWakes };
      await appendEvents(db, jobId, [message(100, attemptId)]);
      await waitFor(() => wakes > before.wakes, 'a wake for the job');
      assert.equal(otherWakes, before.otherWakes);
      unsubscribe();
      unsubscribeOther();
      unsubscribe();
      assert.equal(notifier.subscriberCount(), 0);
    });

    it('reconnects after the connection is killed and wakes again', async () => {
      let wakes = 0;
      const unsubscribe = notifier.subscribe(jobId, () => { wakes += 1; });
      await waitFor(() => notifier.listening, 'the LISTEN connection');
      const killed = await db.raw<{ rows: Array<{ pid: number }> }>(
        `select pg_terminate_backend(pid) as pid from pg_stat_activity where datname = current_database() and application_name = 'agent-event-notifier'`,
      );
      assert.equal(killed.rows.length, 1);
      await waitFor(() => !notifier.listening, 'the notifier to notice the lost connection');
      await waitFor(() => notifier.listening, 'the notifier to reconnect');
      const before = wakes;
      await appendEvents(db, jobId, [message(101, attemptId)]);
      await waitFor(() => wakes > before, 'a wake after reconnecting');
      unsubscribe();
    });

    it('polls subscribers while it cannot connect', async () => {
      const unreachable = createEventNotifier({ connection: { host: '127.0.0.1', port: 1, user: 'x', database: 'x' }, log: captureLogs('notifier').log, pollIntervalMs: 50 });
      try {
        let wakes = 0;
        unreachable.subscribe(jobId, () => { wakes += 1; });
        await waitFor(() => wakes >= 3, 'polling wakes');
        assert.equal(unreachable.listening, false);
      } finally {
        await unreachable.close();
      }
    });
  });
});
