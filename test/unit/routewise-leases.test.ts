/**
 * Probe leases (`routewise_probe_leases`) against real PostgreSQL: two contenders, expiry (made by
 * moving `expires_at` into the past, never by waiting), renew, release and the lease-scoped probe.
 */
import assert from 'node:assert/strict';
import { acquireProbeLease, releaseProbeLease, renewProbeLease, withProbeLease } from '../../gateway/routing/routewise-leases';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';

describe('routewise probe leases (PostgreSQL)', () => {
  let t: TestDatabase;
  freshDatabaseForBlock((db) => {
    t = db;
  });

  const lease = (modelId: string, holder: string) => ({ modelId, holder, ttlMs: 60_000 });
  const expire = (modelId: string) => t.db.raw(`update routewise_probe_leases set expires_at = now() - interval '1 second' where model_id = ?`, [modelId]);
  const holderOf = async (modelId: string) => (await t.db('routewise_probe_leases').where({ model_id: modelId }).first<{ holder: string } | undefined>('holder'))?.holder;

  it('gives a model to exactly one of two concurrent contenders, per model', async () => {
    for (let i = 0; i < 20; i += 1) {
      const model = `race-${i}`;
      const [w1, w2] = await Promise.all([acquireProbeLease(t.db, lease(model, 'w1')), acquireProbeLease(t.db, lease(model, 'w2'))]);
      assert.equal(Number(w1) + Number(w2), 1, `one winner for ${model}`);
      assert.equal(await holderOf(model), w1 ? 'w1' : 'w2');
    }
    assert.equal(await acquireProbeLease(t.db, lease('other', 'w2')), true, 'another model is independent');
  });

  it('lets the holder re-acquire (extend) and refuses others until the lease expires', async () => {
    assert.equal(await acquireProbeLease(t.db, lease('m', 'w1')), true);
    assert.equal(await acquireProbeLease(t.db, lease('m', 'w1')), true);
    assert.equal(await acquireProbeLease(t.db, lease('m', 'w2')), false);
    await expire('m');
    assert.equal(await acquireProbeLease(t.db, lease('m', 'w2')), true, 'an expired lease is taken over');
    assert.equal(await holderOf('m'), 'w2');
    assert.equal(await acquireProbeLease(t.db, lease('m', 'w1')), false);
  });

  it('renews only an unexpired lease of the same holder', async () => {
    assert.equal(await acquireProbeLease(t.db, lease('r', 'w1')), true);
    const before = await t.db('routewise_probe_leases').where({ model_id: 'r' }).first<{ expires_at: Date }>('expires_at');
    assert.equal(await renewProbeLease(t.db, { modelId: 'r', holder: 'w1', ttlMs: 3_600_000 }), true);
    const after = await t.db('routewise_probe_leases').where({ model_id: 'r' }).first<{ expires_at: Date }>('expires_at');
    assert.ok(after.expires_at.getTime() > before.expires_at.getTime(), 'moved forward');
    assert.equal(await renewProbeLease(t.db, lease('r', 'w2')), false, 'not the holder');
    await expire('r');
    assert.equal(await renewProbeLease(t.db, lease('r', 'w1')), false, 'expired: must acquire again');
    assert.equal(await renewProbeLease(t.db, lease('nobody-has-it', 'w1')), false);
    await assert.rejects(renewProbeLease(t.db, { modelId: 'r', holder: 'w1', ttlMs: 0 }), RangeError);
  });

  it('releases only its own lease; a probe runs under the lease and always gives it back', async () => {
    assert.equal(await acquireProbeLease(t.db, lease('p', 'w1')), true);
    assert.equal(await releaseProbeLease(t.db, lease('p', 'w2')), false);
    assert.equal(await withProbeLease(t.db, lease('p', 'w2'), () => Promise.resolve('ran')), undefined, 'w1 holds it: w2 does not probe');
    assert.equal(await releaseProbeLease(t.db, lease('p', 'w1')), true);
    assert.deepEqual(await withProbeLease(t.db, lease('p', 'w2'), async () => {
      assert.equal(await holderOf('p'), 'w2');
      return 'ran';
    }), { value: 'ran' });
    assert.equal(await holderOf('p'), undefined, 'released after the probe');
    await assert.rejects(withProbeLease(t.db, lease('p', 'w1'), () => Promise.reject(new Error('probe failed'))), /probe failed/);
    assert.equal(await holderOf('p'), undefined, 'released after a failed probe');
  });
});
