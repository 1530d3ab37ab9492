/**
 * Provider keys reserved for a minimum caller role (admin API `min_role`), end to end over HTTP
 * with real account keys: each role's requests reach the upstream only with the keys its role
 * may use, and a role left with no key gets 503.
 */
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, admin } from '../support/admin';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

describe('provider keys reserved by caller role (HTTP, PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  const keys: Record<'free' | 'pro' | 'internal', string> = { free: '', pro: '', internal: '' };

  const chat = (key: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const upstreamKeys = (from: number) => new Set(upstream.requests.slice(from).map((r) => r.headers.authorization));

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n  - id: m\n    name: M\n    route: [{ kind: generic_compat, provider: tiered, base_url: "${upstream.url}", api_key: env-shared-key }]\n`,
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN, AUTH_KEY_REFRESH_SECONDS: '0.2' },
    });
    for (const role of ['free', 'pro', 'internal'] as const) {
      const email = `${role}-tier@example.com`;
      keys[role] = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, email));
      await t.db('users').where({ email }).update({ role, updated_at: t.db.fn.now() });
    }
    await eventually(() => Promise.resolve(gw.deps.keys?.lookup(keys.internal)?.role === 'internal'), 'the roles');
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('uses each key only for callers of at least its role', async () => {
    const listed = await admin<{ env_keys: Array<{ provider: string; fingerprint: string }> }>(gw, 'GET', '/admin/provider-keys');
    const envKey = listed.body.env_keys.find((k) => k.provider === 'tiered');
    assert.ok(envKey, 'the file key is listed by fingerprint');
    assert.ok(!JSON.stringify(listed.body).includes('env-shared-key'), 'never the key itself');
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys/min-role-env', { provider: 'tiered', fingerprint: envKey.fingerprint, min_role: 'pro' })).status, 200);
    assert.equal((await admin(gw, 'POST', '/admin/provider-keys', { provider: 'tiered', api_key: 'sk-internal-only', label: 'internal', min_role: 'internal' })).status, 201);

    const free = await chat(keys.free);
    assert.equal(free.status, 503, 'no key is left for a free caller');

    let from = upstream.requests.length;
    for (let i = 0; i < 4; i += 1) assert.equal((await chat(keys.pro)).status, 200);
    assert.deepEqual(upstreamKeys(from), new Set(['Bearer env-shared-key']), 'a pro caller never uses the internal key');

    from = upstream.requests.length;
    for (let i = 0; i < 4; i += 1) assert.equal((await chat(keys.internal)).status, 200);
    assert.deepEqual(upstreamKeys(from), new Set(['Bearer env-shared-key', 'Bearer sk-internal-only']), 'an internal caller rotates through both');
  });
});
