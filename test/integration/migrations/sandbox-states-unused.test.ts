/**
 * Migration 20261208050000_agent_sandbox_states_unused (real PostgreSQL; docs/sandboxes.md
 * "States"): `stopping` and `failed`, never written, are no longer sandbox group states: the
 * schema refuses them, the inventory route answers 400 naming `state` for them, the metrics
 * count the states that exist; its `down` allows them again, and its `up` refuses while a row
 * holds one.
 */
import assert from 'node:assert/strict';
import { migrations } from '../../../migrations';
import { admin } from '../../support/admin';
import { startTestApi } from '../../support/api';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { SANDBOX_STATES } from '../../../agent/metrics/control-plane-snapshot';

const NAME = '20261208050000_agent_sandbox_states_unused';
const migration = migrations.find((m) => m.name === NAME)!;

describe(`migration ${NAME} (PostgreSQL)`, () => {
  let t: TestDatabase;
  before(async () => {
    t = await freshDatabase();
    await t.db('agent_hosts').insert({ host_id: 'h', credential_hash: 'x', credential_prefix: 'p' });
  });
  after(async () => {
    await t?.drop();
  });
  const group = (groupId: string, state: string) => t.db('agent_sandboxes').insert({ group_id: groupId, host_id: 'h', container_name: `sbx-${groupId}`, state });

  it('the schema refuses stopping and failed; every state the control plane writes is accepted', async () => {
    for (const state of ['stopping', 'failed']) await assert.rejects(group(`grp_${state}`, state), /agent_sandboxes_state_check/, state);
    for (const state of SANDBOX_STATES) await group(`grp_ok_${state}`, state);
    assert.equal((await t.db('agent_sandboxes').count<Array<{ count: string }>>({ count: '*' }))[0]?.count, String(SANDBOX_STATES.length));
    assert.ok(!(SANDBOX_STATES as readonly string[]).includes('stopping') && SANDBOX_STATES.includes('stop_pending'), 'metrics count the real states');
  });

  it('the inventory route names the states there are and refuses the dropped ones with 400', async () => {
    const api = await startTestApi({ db: t.db });
    try {
      for (const state of ['stopping', 'failed']) {
        const res = await admin<{ error: { message: string; param: string } }>(api, 'GET', `/admin/agent/sandboxes?state=${state}`);
        assert.equal(res.status, 400, state);
        assert.equal(res.body.error.param, 'state');
        assert.doesNotMatch(res.body.error.message, /stopping|failed/);
        assert.match(res.body.error.message, /stop_pending/);
      }
      assert.equal((await admin(api, 'GET', '/admin/agent/sandboxes?state=stop_pending')).status, 200);
    } finally {
      await api.close();
    }
  });

  it('down allows them again; up then refuses while a row holds one, naming it, and applies once it is gone', async () => {
    await t.db.transaction(async (trx) => {
      await migration.down(trx);
      await trx('agent_sandboxes').insert({ group_id: 'grp_old_failed', host_id: 'h', container_name: 'sbx-old', state: 'failed' });
      await assert.rejects(migration.up(trx), new RegExp(`^Error: Refusing to apply ${NAME}: 1 group\\(s\\) failed`));
      await trx('agent_sandboxes').where({ group_id: 'grp_old_failed' }).update({ state: 'stopped' });
      await migration.up(trx);
    });
    await assert.rejects(group('grp_after', 'failed'), /agent_sandboxes_state_check/);
  });
});
