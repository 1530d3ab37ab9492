/**
 * Host enrollment and heartbeats through the control-plane API on real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { enrollHost } from '../../agent/hosts/host-registry';
import { hashSecret } from '../../lib/crypto';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';

describe('control-plane API: health, host enrollment and heartbeat', () => {
  let t: TestDatabase;
  let serving: TestApi;
  let temporalUp = true;

  before(async () => {
    t = await freshDatabase();
    serving = await startTestApi({ db: t.db, temporalReachable: () => Promise.resolve(temporalUp) });
  });
  after(async () => {
    await serving.close();
    await t.drop();
  });

  const beat = (hostId: string, credential: string | undefined, body: unknown) =>
    fetch(`${serving.url}/v1/agent/hosts/${hostId}/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
      body: JSON.stringify(body),
    });
  const goodBeat = { slots_total: 4, runtime: 'docker-20.10', runner_version: '1', capabilities: ['container'] };

  it('reports healthy, and degraded when Temporal does not answer', async () => {
    assert.deepEqual(await (await fetch(`${serving.url}/health`)).json(), { status: 'healthy', database_connected: true, temporal_connected: true });
    temporalUp = false;
    const res = await fetch(`${serving.url}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'degraded', database_connected: true, temporal_connected: false });
    temporalUp = true;
  });

  it('stores only the digest of the enrollment credential', async () => {
    const { credential } = await enrollHost(t.db, 'host-a');
    assert.match(credential, /^ahc_[A-Za-z0-9_-]{43}$/);
    const row = await t.db('agent_hosts').where({ host_id: 'host-a' }).first<{ credential_hash: string; credential_prefix: string }>();
    assert.equal(row?.credential_hash, hashSecret(credential));
    assert.ok(!JSON.stringify(row).includes(credential));
    assert.ok(credential.startsWith(row?.credential_prefix ?? 'x'));
  });

  it('accepts a heartbeat with the host credential and records slots, runtime and attestations', async () => {
    const { credential } = await enrollHost(t.db, 'host-b');
    const res = await beat('host-b', credential, goodBeat);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { host_id: 'host-b', slots_configured: null, slots_effective: 4 });
    const row = await t.db('agent_hosts').where({ host_id: 'host-b' }).first<{ slots_total: number; runtime: string; capabilities: string[]; last_heartbeat_at: Date | null }>();
    assert.equal(row?.slots_total, 4);
    assert.equal(row?.runtime, 'docker-20.10');
    assert.deepEqual(row?.capabilities, ['container']);
    assert.ok(row?.last_heartbeat_at instanceof Date);
    await t.db('agent_hosts').where({ host_id: 'host-b' }).update({ slots_saved: 2 });
    assert.deepEqual(await (await beat('host-b', credential, goodBeat)).json(), { host_id: 'host-b', slots_configured: 2, slots_effective: 2 });
  });

  it('refuses a missing, wrong, rotated or other host\'s credential with 401 and changes nothing', async () => {
    const a = await enrollHost(t.db, 'host-c');
    const other = await enrollHost(t.db, 'host-d');
    for (const credential of [undefined, 'ahc_wrong', other.credential]) {
      const res = await beat('host-c', credential, goodBeat);
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'authentication_error');
    }
    const rotated = await enrollHost(t.db, 'host-c');
    assert.equal((await beat('host-c', a.credential, goodBeat)).status, 401);
    assert.equal((await beat('host-c', rotated.credential, goodBeat)).status, 200);
    assert.equal((await beat('no-such-host', rotated.credential, goodBeat)).status, 401);
    const row = await t.db('agent_hosts').where({ host_id: 'host-d' }).first<{ last_heartbeat_at: Date | null }>();
    assert.equal(row?.last_heartbeat_at, null);
  });

  it('rejects bad heartbeat bodies with 400 naming the field', async () => {
    const { credential } = await enrollHost(t.db, 'host-e');
    const cases: Array<[unknown, string]> = [
      [{ ...goodBeat, slots_total: 0 }, 'slots_total'],
      [{ ...goodBeat, runtime: '' }, 'runtime'],
      [{ ...goodBeat, extra: 1 }, ''],
    ];
    for (const [body, field] of cases) {
      const res = await beat('host-e', credential, body);
      assert.equal(res.status, 400);
      const error = ((await res.json()) as { error: { message: string; param: string | null } }).error;
      if (field) assert.equal(error.param, field);
      else assert.match(error.message, /extra/);
    }
    const malformed = await fetch(`${serving.url}/v1/agent/hosts/host-e/heartbeat`, { method: 'POST', headers: { authorization: `Bearer ${credential}` }, body: '{"slots_total":' });
    assert.equal(malformed.status, 400);
    assert.match(((await malformed.json()) as { error: { message: string } }).error.message, /not valid JSON/);
    const row = await t.db('agent_hosts').where({ host_id: 'host-e' }).first<{ last_heartbeat_at: Date | null }>();
    assert.equal(row?.last_heartbeat_at, null);
  });
});
