/**
 * Migration 20261127010000_agent_host_settings_retired (PostgreSQL; docs/agent-admin.md "Host
 * settings"): saved values of the former host settings (forks, terminals) are deleted, every other
 * saved setting stays, the change marker moves only when a row went (so processes read again), and
 * the settings routes then serve the database as usual.
 */
import assert from 'node:assert/strict';
import { RETIRED_KEYS, up } from '../../../migrations/20261127010000_agent_host_settings_retired';
import { admin } from '../../support/admin';
import { startTestApi } from '../../support/api';
import { freshDatabase, type TestDatabase } from '../../support/db';

describe('migration 20261127010000_agent_host_settings_retired (PostgreSQL)', () => {
  let t: TestDatabase;
  after(async () => {
    await t?.drop();
  });

  const revision = async () => String((await t.db('agent_settings_state').first<{ revision: string } | undefined>('revision'))?.revision ?? '0');
  const keys = async () => (await t.db('agent_settings').orderBy('key').select<Array<{ key: string }>>('key')).map((r) => r.key);

  it('deletes the former settings\' saved values, keeps the others, and moves the change marker only when it deleted one', async () => {
    t = await freshDatabase();
    await t.db('agent_settings_state').insert({ singleton: true, revision: 7 });
    await t.db('agent_settings').insert([
      ...RETIRED_KEYS.map((key) => ({ key, value: JSON.stringify(4), sealed: null })),
      { key: 'idle_timeout_seconds', value: JSON.stringify(600), sealed: null },
    ]);
    await up(t.db);
    assert.deepEqual(await keys(), ['idle_timeout_seconds']);
    assert.equal(await revision(), '8');
    await up(t.db);
    assert.equal(await revision(), '8', 'nothing deleted, nothing moved');

    const api = await startTestApi({ db: t.db });
    try {
      const read = await admin<{ settings: Record<string, { value: unknown }> }>(api, 'GET', '/admin/agent/host-settings');
      assert.equal(read.status, 200);
      assert.equal(read.body.settings.idle_timeout_seconds?.value, 600);
      assert.equal((await admin(api, 'PUT', '/admin/agent/host-settings', { settings: { idle_timeout_seconds: null } })).status, 200);
      assert.deepEqual(await keys(), []);
    } finally {
      await api.close();
    }
  });
});
