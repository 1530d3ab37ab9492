/**
 * The runtime-configuration migration: its tables exist with their constraints, and reverting
 * refuses while stored admin changes would be lost.
 */
import assert from 'node:assert/strict';
import { migrateDown } from '../../migrations/runner';
import * as runtimeConfig from '../../migrations/20261121030000_runtime_config';
import { freshDatabase, type TestDatabase } from '../support/db';

describe('runtime configuration migration (PostgreSQL)', () => {
  let t: TestDatabase;
  beforeEach(async () => {
    t = await freshDatabase();
  });
  afterEach(async () => {
    await t.drop();
  });

  it('refuses to revert while a weight override is stored, through the runner and its own down', async () => {
    await t.db('provider_weight_overrides').insert({ model_id: 'm', endpoint_id: 'ep_1', weight: 0 });
    await assert.rejects(migrateDown(t.db), /provider_weight_overrides holds rows/);
    await assert.rejects(runtimeConfig.down(t.db), /Refusing to revert 20261121030000_runtime_config: table provider_weight_overrides/);
    assert.equal((await t.db('provider_weight_overrides').count<Array<{ count: string }>>('* as count'))[0]!.count, '1');
  });

  it('enforces roles and non-negative weights in the schema', async () => {
    await assert.rejects(t.db('model_visibility_overrides').insert({ model_id: 'm', required_role: 'root' }), /model_visibility_overrides_role_check/);
    await assert.rejects(t.db('provider_weight_overrides').insert({ model_id: 'm', endpoint_id: 'e', weight: -1 }), /provider_weight_overrides_weight_check/);
    await assert.rejects(t.db('provider_api_keys').insert({ provider: 'p', api_key: 'k', key_prefix: 'k', fingerprint: 'f', min_role: 'root' }), /provider_api_keys_min_role_check/);
  });
});
