/**
 * Reverting migration 20261125060000_agent_sandbox_archives (real PostgreSQL, an isolated database
 * migrated up to it; docs/sandboxes.md "States"): knex's own `down` refuses, naming what would be
 * lost and changing nothing, while a group is cold or restoring (its workspace exists only as an
 * archive) or a receipt exists; with none, it reverts.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { migrations, type Migration } from '../../../migrations';
import { emptyDatabase, type TestDatabase } from '../../support/db';

const NAME = '20261125060000_agent_sandbox_archives';
const UP_TO = migrations.slice(0, migrations.findIndex((m) => m.name === NAME) + 1);

/** Knex's migrator over the migrations up to this one (the real runner's list, cut after it). */
const config = (): Knex.MigratorConfig => ({
  tableName: 'knex_migrations',
  migrationSource: {
    getMigrations: () => Promise.resolve([...UP_TO]),
    getMigrationName: (m: Migration) => m.name,
    getMigration: (m: Migration) => Promise.resolve({ up: m.up, down: m.down }),
  },
});

describe(`migration ${NAME}: down (PostgreSQL)`, () => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await emptyDatabase();
    await t.db.migrate.latest(config());
    await t.db('agent_hosts').insert({ host_id: 'h', credential_hash: 'x', credential_prefix: 'p' });
  });
  afterEach(async () => {
    await t?.drop();
  });

  const applied = async () => (await t.db('knex_migrations').pluck<string[]>('name')).includes(NAME);
  const group = (groupId: string, state: string) => t.db('agent_sandboxes').insert({ group_id: groupId, host_id: 'h', container_name: `sbx-${groupId}`, state });

  for (const state of ['cold', 'restoring']) {
    it(`refuses while a group is ${state}, naming it, and changes nothing`, async () => {
      assert.equal(await applied(), true, 'migrated up to it');
      await group('grp_a', state);
      await group('grp_b', 'stopped');
      await assert.rejects(t.db.migrate.down(config()), (err: Error) => {
        assert.match(err.message, new RegExp(`^Refusing to revert ${NAME}: 1 group\\(s\\) ${state}; their workspaces exist only as archives`));
        return true;
      });
      assert.equal(await applied(), true, 'still applied');
      assert.equal(await t.db.schema.hasTable('agent_sandbox_archives'), true, 'nothing was dropped');
      assert.equal((await t.db('agent_sandboxes').where({ group_id: 'grp_a' }).first<{ state: string }>('state'))?.state, state);
    });
  }

  it('refuses while a receipt exists (a restored group keeps its older receipts)', async () => {
    await group('grp_r', 'running');
    await t.db('agent_sandbox_archives').insert({ group_id: 'grp_r', generation: 1, object_key: 'k/1.tar', bytes: 10, sha256: 'b'.repeat(64), verified_by: 'read' });
    await assert.rejects(t.db.migrate.down(config()), /1 archive receipt\(s\) in agent_sandbox_archives/);
    assert.equal(await applied(), true);
  });

  it('reverts when no group is cold, restoring or archiving and no receipt exists', async () => {
    await group('grp_s', 'stopped');
    await group('grp_d', 'dead');
    await t.db.migrate.down(config());
    assert.equal(await applied(), false, 'recorded as reverted');
    assert.equal(await t.db.schema.hasTable('agent_sandbox_archives'), false);
    assert.equal((await t.db('agent_sandboxes').count<Array<{ count: string }>>({ count: '*' }))[0]?.count, '2', 'the groups stay');
    await assert.rejects(group('grp_x', 'archiving'), /agent_sandboxes_state_check/, 'the older schema has no archiving state');
    await t.db.migrate.latest(config());
    assert.equal(await applied(), true, 'and up again');
  });
});
