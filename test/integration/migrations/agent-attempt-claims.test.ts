/**
 * Migration 20261208040000_agent_attempt_claims (PostgreSQL; docs/agent-hosts.md "The claim
 * queue"): `down` refuses while a host's claim admitted a running attempt that no chat workflow
 * has taken (reverting would lose what it was admitted with), and drops both columns otherwise.
 */
import assert from 'node:assert/strict';
import { down, up } from '../../../migrations/20261208040000_agent_attempt_claims';
import { claimQueuedTurns } from '../../../agent/jobs/turn-claims';
import { insertHost, insertJobWithTurn, insertOwner } from '../../support/agent-rows';
import { freshDatabase, type TestDatabase } from '../../support/db';

describe('migration 20261208040000_agent_attempt_claims (PostgreSQL)', () => {
  let t: TestDatabase;
  after(async () => {
    await t?.drop();
  });

  it('refuses to revert while a claimed attempt is not taken, then reverts and applies again', async () => {
    t = await freshDatabase();
    await insertHost(t.db, 'host-a', { slotsTotal: 2 });
    await insertJobWithTurn(t.db, await insertOwner(t.db, 'owner@example.test'));
    const [claimed] = await claimQueuedTurns(t.db, 'host-a', { staleSeconds: 90, defaultSlots: 3 });
    assert.ok(claimed);
    await assert.rejects(down(t.db), /Refusing to revert 20261208040000_agent_attempt_claims: running attempts admitted by a host's claim/);
    assert.equal(await t.db.schema.hasColumn('agent_attempts', 'admission'), true, 'nothing dropped');
    await t.db('agent_attempts').where({ attempt_id: claimed.admitted.attemptId }).update({ dispatched_run: 'run-1' });
    await down(t.db);
    assert.equal(await t.db.schema.hasColumn('agent_attempts', 'admission'), false);
    assert.equal(await t.db.schema.hasColumn('agent_attempts', 'dispatched_run'), false);
    await up(t.db);
    assert.equal(await t.db.schema.hasColumn('agent_attempts', 'dispatched_run'), true);
  });
});
