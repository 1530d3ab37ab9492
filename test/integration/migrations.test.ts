/**
 * Migrations go up and down against real PostgreSQL; a down that would lose rows refuses.
 */
import assert from 'node:assert/strict';
import { migrateDown, migrateLatest, migrationStatus } from '../../migrations/runner';
import { migrations } from '../../migrations';
import { emptyDatabase, freshDatabase, type TestDatabase } from '../support/db';

async function tables(t: TestDatabase): Promise<string[]> {
  const result = await t.db.raw<{ rows: Array<{ tablename: string }> }>(`select tablename from pg_tables where schemaname = 'public' and tablename not like 'knex_%' order by 1`);
  return result.rows.map((r) => r.tablename);
}

/** Every table the migrations create, sorted. */
const ALL_TABLES = migrations.flatMap((m) => m.TABLES).sort();

describe('migrations (PostgreSQL)', () => {
  let t: TestDatabase;
  afterEach(async () => {
    await t?.drop();
  });

  it('applies every migration to an empty database, then reverts the batch', async () => {
    t = await emptyDatabase();
    assert.deepEqual(await tables(t), []);
    const applied = await migrateLatest(t.db);
    assert.deepEqual(applied, migrations.map((m) => m.name));
    assert.deepEqual(await tables(t), ALL_TABLES);
    assert.deepEqual(await migrateLatest(t.db), [], 'a second run applies nothing');
    assert.deepEqual((await migrationStatus(t.db)).pending, []);

    const reverted = await migrateDown(t.db);
    assert.deepEqual(reverted, [...migrations.map((m) => m.name)].reverse());
    assert.deepEqual(await tables(t), []);
    assert.deepEqual((await migrationStatus(t.db)).applied, []);
  });

  it('refuses to revert the initial schema while its tables hold rows', async () => {
    t = await freshDatabase();
    await t.db('site_settings').insert({ key: 'k', value: JSON.stringify({ a: 1 }) });
    await assert.rejects(migrateDown(t.db), /site_settings holds rows/);
    assert.deepEqual(await tables(t), ALL_TABLES, 'nothing was dropped');
    const row = await t.db('site_settings').where({ key: 'k' }).first<{ value: unknown }>();
    assert.deepEqual(row?.value, { a: 1 });
  });

  it('refuses to revert the audit log while it holds rows', async () => {
    t = await freshDatabase();
    await t.db('agent_audit_log').insert({ category: 'hosts', action: 'agent.host.removed', source: 'admin', actor_type: 'admin_token', outcome: 'succeeded' });
    await assert.rejects(migrateDown(t.db), /20261125010000_agent_audit_log: table agent_audit_log holds rows/);
    assert.deepEqual(await tables(t), ALL_TABLES, 'nothing was dropped');
    assert.equal((await t.db('agent_audit_log')).length, 1);
  });

  it('refuses to revert the sandbox observations while orphans, usage or readings are recorded', async () => {
    t = await freshDatabase();
    const now = new Date();
    await t.db('agent_sandbox_orphans').insert({ host_id: 'h', container_id: 'c', container_name: 'n', reason: 'no_group', first_seen_at: now, last_seen_at: now });
    await assert.rejects(migrateDown(t.db), /20261125050000_agent_sandbox_observations: table agent_sandbox_orphans holds rows/);
    await t.db('agent_sandbox_orphans').delete();
    await t.db('agent_hosts').insert({ host_id: 'h', credential_hash: 'x', credential_prefix: 'p' });
    await t.db('agent_sandboxes').insert({ group_id: 'g', host_id: 'h', container_name: 'sbx-g', observed_at: now });
    // (The batch revert refuses earlier, on the host row; this migration's own down refuses too.)
    const observations = migrations.find((m) => m.name === '20261125050000_agent_sandbox_observations')!;
    await assert.rejects(observations.down(t.db), /20261125050000_agent_sandbox_observations: agent_sandboxes holds resource observations/);
    assert.deepEqual(await tables(t), ALL_TABLES, 'nothing was dropped');
    assert.equal((await t.db('agent_sandboxes').whereNotNull('observed_at')).length, 1);
  });

  it('refuses to revert the host removal request while a host is draining; a tombstone does not hold it', async () => {
    t = await freshDatabase();
    // The whole batch stops earlier (agent_hosts holds rows): this migration's own down is what is checked.
    const removalRequest = migrations.find((m) => m.name === '20261125030000_agent_host_removal_request')!;
    await t.db('agent_hosts').insert({
      host_id: 'draining-host', credential_hash: 'x', credential_prefix: 'p', removal_requested_at: t.db.fn.now(),
      removal_requested_by: JSON.stringify({ actor: { type: 'admin_token' }, actorIp: null }),
    });
    await t.db('agent_hosts').insert({ host_id: 'tombstone-host', credential_hash: 'x', credential_prefix: 'removed', removal_requested_at: t.db.fn.now(), removed_at: t.db.fn.now() });
    await assert.rejects(removalRequest.down(t.db), /20261125030000_agent_host_removal_request: agent_hosts holds hosts whose removal is pending/);
    assert.equal(await t.db.schema.hasColumn('agent_hosts', 'removal_requested_by'), true, 'nothing was dropped');
    await t.db('agent_hosts').where({ host_id: 'draining-host' }).update({ removal_requested_at: null, removal_requested_by: null });
    await removalRequest.down(t.db);
    assert.equal(await t.db.schema.hasColumn('agent_hosts', 'removal_requested_by'), false, 'reverted once the drain is cancelled');
    await removalRequest.up(t.db);
  });

  it('refuses to revert chat deletion while deletion requests exist', async () => {
    t = await freshDatabase();
    await t.db('agent_deletion_requests').insert({ id: 'del_1', job_id: 'job_1', owner_id: 1 });
    await assert.rejects(migrateDown(t.db), /20261125070000_agent_chat_deletion: table agent_deletion_requests holds rows/);
    assert.deepEqual(await tables(t), ALL_TABLES, 'nothing was dropped');
  });

  it('refuses to revert signing keys and impersonation while keys or impersonations are stored; reverts cleanly once empty', async () => {
    t = await freshDatabase();
    const migration = migrations.find((m) => m.name === '20261208010000_identity_signing_keys_impersonation')!;
    await t.db('auth_signing_keys').insert({ kid: 'bootstrap', activates_at: new Date(0), retires_at: new Date() });
    await assert.rejects(migration.down(t.db), /20261208010000_identity_signing_keys_impersonation: auth_signing_keys holds rotated signing keys/);
    await t.db('auth_signing_keys').del();
    const [user] = await t.db('users').insert({ email: 'u@example.com', password_hash: 'x' }).returning<Array<{ id: string }>>('id');
    await t.db('impersonations').insert({ user_id: user!.id, admin_user_id: 1, admin_session: '2b3c4d5e-1234-4abc-9def-0123456789ab', expires_at: new Date() });
    await assert.rejects(migration.down(t.db), /impersonations holds the impersonation history/);
    assert.deepEqual(await tables(t), ALL_TABLES, 'nothing was dropped');
    await t.db('impersonations').del();
    await migration.down(t.db);
    assert.ok(!(await tables(t)).includes('auth_signing_keys'));
    await migration.up(t.db);
  });

  it('refuses to revert the owner SSH keys while a key is registered, then reverts once none is', async () => {
    t = await freshDatabase();
    const ssh = migrations.find((m) => m.name === '20261208030000_agent_user_ssh_servers')!;
    const [user] = await t.db('users').insert({ email: 'ssh-migration@example.test' }).returning<Array<{ id: string }>>('id');
    await t.db('agent_ssh_keys').insert({
      user_id: user!.id, name: 'laptop', key_type: 'ssh-ed25519', public_key: 'ssh-ed25519 AAAA', fingerprint: `SHA256:${'A'.repeat(43)}`,
    });
    await assert.rejects(ssh.down(t.db), /20261208030000_agent_user_ssh_servers: table agent_ssh_keys holds owners' SSH keys/);
    assert.equal(await t.db.schema.hasColumn('agent_hosts', 'ssh_port'), true, 'nothing was dropped');
    await t.db('agent_ssh_keys').delete();
    await ssh.down(t.db);
    assert.equal(await t.db.schema.hasTable('agent_ssh_keys'), false);
    assert.equal(await t.db.schema.hasColumn('agent_hosts', 'ssh_port'), false);
    await ssh.up(t.db);
  });

  it('enforces the host slot range in the schema', async () => {
    t = await freshDatabase();
    await assert.rejects(
      t.db('agent_hosts').insert({ host_id: 'h', credential_hash: 'x', credential_prefix: 'p', slots_saved: 1 }),
      /agent_hosts_slots_saved_range/,
    );
  });
});
