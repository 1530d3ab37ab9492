/**
 * Migration 20261121080000_agent_title_grants (PostgreSQL): `agent_grants.kind` accepts `title`
 * after `up`; `down` refuses while title grants exist and narrows the check again once they are gone.
 */
import assert from 'node:assert/strict';
import type { Db } from '../../lib/db';
import { down, up } from '../../migrations/20261121080000_agent_title_grants';
import { freshDatabase, type TestDatabase } from '../support/db';

async function insertGrant(db: Db, userId: string, kind: string): Promise<void> {
  await db('agent_grants').insert({
    grant_id: `grant_${kind}-x`, token_hash: `hash-${kind}`, token_prefix: 'agr_xxxx', user_id: userId, model: 'm', kind,
    job_id: 'job_x', operation_id: `${kind}-x`, expires_at: db.raw(`now() + interval '120 seconds'`),
  });
}

describe('migration 20261121080000_agent_title_grants (PostgreSQL)', () => {
  let t: TestDatabase;
  afterEach(async () => {
    await t?.drop();
  });

  it('accepts title grants, refuses to revert while any exist, and narrows the kinds once they are gone', async () => {
    t = await freshDatabase();
    const [user] = await t.db('users').insert({ email: 'titles@example.com', role: 'pro' }).returning<Array<{ id: string }>>('id');
    await insertGrant(t.db, user!.id, 'title');
    await assert.rejects(insertGrant(t.db, user!.id, 'other'), /agent_grants_kind_check/);

    await assert.rejects(down(t.db), /agent_grants holds grants of kind 'title'/);
    assert.equal((await t.db('agent_grants').where({ kind: 'title' })).length, 1, 'nothing was deleted');

    await t.db('agent_grants').where({ kind: 'title' }).delete();
    await down(t.db);
    await assert.rejects(insertGrant(t.db, user!.id, 'title'), /agent_grants_kind_check/);
    await insertGrant(t.db, user!.id, 'prompt_rewrite');

    await up(t.db);
    await insertGrant(t.db, user!.id, 'title');
  });
});
