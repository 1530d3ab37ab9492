/**
 * The repeated-auth-failure blocklist (docs/identity.md) through a real gateway: failures counted per
 * client source (addresses asserted by a trusted proxy), 429 with the documented message even for a
 * corrected key, exempt sources, the admin listing and lifting of blocks.
 */
import assert from 'node:assert/strict';
import { BLOCKED_MESSAGE } from '../../gateway/auth/auth-failure-blocklist';
import { createKey, postJson, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const ATTACKER = '8.8.8.8';
const ADMIN = '1.1.1.1';
const EXEMPT = '9.9.9.9';

describe('auth-failure blocklist', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let key: string;

  const chat = (from: string, authorization: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'x-forwarded-for': from, authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${gw.url}${path}`, { ...init, headers: { 'x-forwarded-for': ADMIN, authorization: 'Bearer admin-secret-token', 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}" }\n`,
      env: {
        USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN: 'admin-secret-token',
        TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32',
        AUTH_FAILURE_BLOCK_THRESHOLD: '3', AUTH_FAILURE_BLOCK_EXEMPT_IPS: `${EXEMPT}, 2001:4860::/32`,
      },
    });
    key = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, 'dana@example.com'));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('blocks a source after the threshold; a corrected key still gets 429 until the block is lifted', async () => {
    assert.equal((await chat(ATTACKER, `Bearer ${key}`)).status, 200);
    for (let i = 0; i < 3; i += 1) assert.equal((await chat(ATTACKER, 'Bearer gk_wrong')).status, 401);
    const refused = await chat(ATTACKER, `Bearer ${key}`);
    assert.equal(refused.status, 429);
    assert.equal(((await refused.json()) as { error: { message: string } }).error.message, BLOCKED_MESSAGE);
    assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'dana@example.com', password: 'correct horse battery' }, { 'x-forwarded-for': ATTACKER })).status, 429);
    assert.equal((await chat('8.8.4.4', `Bearer ${key}`)).status, 200, 'another source is not affected');
    assert.ok(gw.logs.lines.some((l) => l.event === 'auth_ip_blocked' && l.source === ATTACKER));

    const listed = (await (await admin('/admin/auth-blocks')).json()) as { data: Array<{ source: string; failures_in_window: number }> };
    assert.deepEqual(listed.data.map((b) => [b.source, b.failures_in_window]), [[ATTACKER, 3]]);

    const cleared = await admin('/admin/auth-blocks/clear', { method: 'POST', body: JSON.stringify({ ip: ATTACKER }) });
    assert.deepEqual(await cleared.json(), { ip: ATTACKER, cleared: true });
    assert.equal((await chat(ATTACKER, `Bearer ${key}`)).status, 200);
    const again = await admin('/admin/auth-blocks/clear', { method: 'POST', body: JSON.stringify({ ip: ATTACKER }) });
    assert.deepEqual(await again.json(), { ip: ATTACKER, cleared: false }, 'nothing left to lift');
    assert.equal((await admin('/admin/auth-blocks/clear', { method: 'POST', body: JSON.stringify({}) })).status, 400);
  });

  it('counts failed logins and admin credentials too, and never blocks exempt sources', async () => {
    const source = '4.4.4.4';
    for (let i = 0; i < 3; i += 1) {
      const res = await postJson(`${gw.url}/auth/login`, { email: 'dana@example.com', password: `wrong ${i}` }, { 'x-forwarded-for': source });
      assert.equal(res.status, 401);
    }
    assert.equal((await chat(source, `Bearer ${key}`)).status, 429);

    const adminGuess = '5.5.5.5';
    for (let i = 0; i < 3; i += 1) assert.equal((await fetch(`${gw.url}/admin/auth-blocks`, { headers: { 'x-forwarded-for': adminGuess, authorization: `Bearer guess-${i}` } })).status, 401);
    assert.equal((await fetch(`${gw.url}/admin/auth-blocks`, { headers: { 'x-forwarded-for': adminGuess, authorization: 'Bearer admin-secret-token' } })).status, 429, 'even the right admin token');

    for (const exempt of [EXEMPT, '2001:4860:4860::8888']) {
      for (let i = 0; i < 5; i += 1) assert.equal((await chat(exempt, 'Bearer gk_wrong')).status, 401);
      assert.equal((await chat(exempt, `Bearer ${key}`)).status, 200, `${exempt} is exempt`);
    }
  });

  it('blocks IPv6 clients by their /64', async () => {
    for (let i = 1; i <= 3; i += 1) assert.equal((await chat(`2a00:1450:4001:810::${i}`, 'Bearer gk_wrong')).status, 401);
    assert.equal((await chat('2a00:1450:4001:810::99', `Bearer ${key}`)).status, 429, 'same /64');
    assert.equal((await chat('2a00:1450:4001:811::1', `Bearer ${key}`)).status, 200, 'another /64');
  });
});
