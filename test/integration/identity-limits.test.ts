/**
 * What a caller's account decides on the inference path: per-user concurrency and daily quota
 * (429), `X-Probe: synthetic` honoured only for internal/admin keys (`X-Provider`), and
 * `X-Route-Pin` only for administrators.
 */
import assert from 'node:assert/strict';
import { createKey, eventually, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

describe('identity on the inference path: limits, probes, pins', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  const keys: Record<'free' | 'internal' | 'admin', string> = { free: '', internal: '', admin: '' };

  const chat = (key: string, headers: Record<string, string> = {}, model = 'm') => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n  - id: m\n    name: M\n    route: [{ kind: generic_compat, base_url: "${upstream.url}", provider: probe-label }]\n`,
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', USER_CONCURRENCY_LIMIT: '2', USER_DAILY_QUOTA_USD: '1', AUTH_KEY_REFRESH_SECONDS: '0.2' },
    });
    for (const role of ['free', 'internal', 'admin'] as const) {
      const email = `${role}@example.com`;
      keys[role] = await createKey(gw.url, await signUpAndLogIn(gw.url, t.db, email));
      if (role !== 'free') await t.db('users').where({ email }).update({ role, updated_at: t.db.fn.now() });
    }
    await eventually(async () => (await chat(keys.internal, { 'x-probe': 'synthetic' })).headers.has('x-provider'), 'the key cache to see the roles');
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('refuses a user’s third concurrent request with 429 and admits again once one finishes', async () => {
    upstream.enqueue({ kind: 'slow_first_byte', delayMs: 400, then: { kind: 'json' } }, { kind: 'slow_first_byte', delayMs: 400, then: { kind: 'json' } });
    const before = upstream.requests.length;
    const inFlight = [chat(keys.free), chat(keys.free)];
    await upstream.waitForRequests(before + 2);
    const third = await chat(keys.free);
    assert.equal(third.status, 429);
    assert.match(((await third.json()) as { error: { message: string } }).error.message, /at most 2 in flight per user/);
    assert.equal((await chat(keys.internal)).status, 200, 'another user is not limited');
    assert.deepEqual((await Promise.all(inFlight)).map((r) => r.status), [200, 200]);
    assert.equal((await chat(keys.free)).status, 200, 'slots are released when responses close');
  });

  it('refuses a user whose spend today reached the daily quota, until the next UTC day', async () => {
    const user = await t.db('users').where({ email: 'admin@example.com' }).first<{ id: string }>();
    gw.deps.limits.spend(Number(user.id), 1.5);
    const refused = await chat(keys.admin);
    assert.equal(refused.status, 429);
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /Daily quota of 1 USD reached; it resets at 00:00 UTC/);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.equal((await chat(keys.internal)).status, 200);
  });

  it('honours X-Probe: synthetic only from internal or admin keys, answering with X-Provider', async () => {
    const internal = await chat(keys.internal, { 'x-probe': 'synthetic' });
    assert.equal(internal.status, 200);
    assert.equal(internal.headers.get('x-provider'), 'probe-label');
    const free = await chat(keys.free, { 'x-probe': 'synthetic' });
    assert.equal(free.status, 200);
    assert.equal(free.headers.get('x-provider'), null, 'a free key is not a probe');
    const other = await chat(keys.internal, { 'x-probe': 'something-else' });
    assert.equal(other.headers.get('x-provider'), null);
  });

  it('lets only administrators pin a route', async () => {
    const pinned = await chat(keys.free, { 'x-route-pin': 'probe-label' });
    assert.equal(pinned.status, 403);
    const internal = await chat(keys.internal, { 'x-route-pin': 'probe-label' });
    assert.equal(internal.status, 403);
  });
});

describe('X-Probe without authentication', function () {
  this.timeout(20_000);
  it('is not honoured when auth is off (anonymous callers are admins but not probes)', async () => {
    const upstream = await startFakeUpstream();
    const gw = await startTestGateway({ modelsYaml: `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}" }\n` });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-probe': 'synthetic', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }) });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-provider'), null);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
