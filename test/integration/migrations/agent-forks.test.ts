/**
 * Migration 20261208020000_agent_forks (PostgreSQL): its `down` refuses while a chat is a fork
 * (the older code would lose where it came from), and reverts once none is.
 */
import assert from 'node:assert/strict';
import { down, up } from '../../../migrations/20261208020000_agent_forks';
import { createJob, createOwner } from '../../support/agent-records';
import { freshDatabase, type TestDatabase } from '../../support/db';

describe('migration 20261208020000_agent_forks (PostgreSQL)', () => {
  let t: TestDatabase;
  after(async () => {
    await t?.drop();
  });

  it('refuses to revert while a fork exists, then drops the fork columns', async () => {
    t = await freshDatabase();
    const owner = await createOwner(t.db);
    const original = await createJob(t.db, owner.userId);
    const fork = await createJob(t.db, owner.userId);
    await t.db('agent_jobs').where({ job_id: fork }).update({ forked_from_job_id: original, fork_anchor_seq: 1, fork_historical: true });
    await assert.rejects(down(t.db), /Refusing to revert 20261208020000_agent_forks: some chats are forks/);
    assert.equal(await t.db.schema.hasColumn('agent_jobs', 'forked_from_job_id'), true, 'nothing changed');
    await t.db('agent_jobs').where({ job_id: fork }).delete();
    await down(t.db);
    assert.equal(await t.db.schema.hasColumn('agent_jobs', 'forked_from_job_id'), false);
    assert.equal(await t.db.schema.hasColumn('agent_jobs', 'fork_prepared_at'), false);
    await up(t.db);
    assert.equal(await t.db.schema.hasColumn('agent_jobs', 'fork_historical'), true);
  });
});
