/**
 * Accounts and keys end to end against real PostgreSQL: sign-up with e-mail verification through
 * the outbox, login with a refresh cookie, refresh rotation, logout, API keys (shown once, hashed
 * at rest, revocable), roles against visible and invisible models with the official client, and
 * `ADMIN_EMAILS` promotion.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { hashSecret } from '../../lib/crypto';
import { createKey, eventually, logIn, postJson, signUpAndLogIn, verificationToken } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const PASSWORD = 'correct horse battery';

function models(upstream: FakeUpstream): string {
  return `models:
  - { id: open-model, name: Open, provider: generic_compat, base_url: "${upstream.url}" }
  - { id: pro-model, name: Pro, provider: generic_compat, base_url: "${upstream.url}", required_role: pro }
  - { id: admin-model, name: Admin, provider: generic_compat, base_url: "${upstream.url}", admin_only: true }
`;
}

describe('identity: accounts, sessions and API keys (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      db: t.db,
      modelsYaml: models(upstream),
      env: { USER_AUTH_ENABLED: 'true', COOKIE_SECURE: 'false', ADMIN_EMAILS: 'Boss@example.com', AUTH_KEY_REFRESH_SECONDS: '0.2', AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1' },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('signs up, refuses login until the e-mail is verified, then logs in with a refresh cookie', async () => {
    const signup = await postJson(`${gw.url}/auth/signup`, { email: 'alice@example.com', password: PASSWORD });
    assert.equal(signup.status, 201);
    const created = (await signup.json()) as Record<string, unknown>;
    assert.deepEqual({ ...created, id: typeof created.id }, { id: 'number', email: 'alice@example.com', role: 'free', email_verification_required: true });
    const stored = await t.db('users').where({ email: 'alice@example.com' }).first<{ password_hash: string }>();
    assert.match(stored.password_hash, /^scrypt\$/);
    assert.ok(!stored.password_hash.includes(PASSWORD));
    assert.ok(gw.logs.lines.some((l) => l.event === 'email_queued' && l.recipient === 'alice@example.com'));
    const notices = await t.db('email_outbox').where({ kind: 'signup_notice' }).select<Array<{ recipient: string; body: string }>>('recipient', 'body');
    assert.deepEqual(notices.map((n) => n.recipient), ['boss@example.com'], 'SIGNUP_NOTIFY_EMAILS unset: ADMIN_EMAILS are told');
    assert.match(notices[0]!.body, /alice@example\.com/);

    const early = await postJson(`${gw.url}/auth/login`, { email: 'alice@example.com', password: PASSWORD });
    assert.equal(early.status, 403);
    const token = await verificationToken(t.db, 'alice@example.com');
    assert.equal((await postJson(`${gw.url}/auth/verify-email`, { token })).status, 200);
    assert.equal((await postJson(`${gw.url}/auth/verify-email`, { token })).status, 400, 'a token is used once');

    const login = await postJson(`${gw.url}/auth/login`, { email: 'ALICE@example.com', password: PASSWORD });
    assert.equal(login.status, 200);
    const body = (await login.json()) as Record<string, unknown>;
    assert.equal(body.token_type, 'bearer');
    assert.equal(body.expires_in, 900);
    assert.equal(typeof body.access_token, 'string');
    const cookie = login.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^gw_refresh=grt_[A-Za-z0-9_-]+; Max-Age=2592000; Path=\/auth; HttpOnly; SameSite=Strict$/, 'no Secure with COOKIE_SECURE=false');
    const outcomes = (await t.db('login_events').orderBy('id').select<Array<{ outcome: string; ip: string }>>('outcome', 'ip'));
    assert.deepEqual(outcomes.map((o) => o.outcome), ['unverified', 'success']);
    assert.equal(outcomes[1]?.ip, '127.0.0.1');
  });

  it('refuses a duplicate e-mail, a short password and unknown fields with 4xx naming the field', async () => {
    const dup = await postJson(`${gw.url}/auth/signup`, { email: 'Alice@Example.com', password: PASSWORD });
    assert.equal(dup.status, 409);
    const short = await postJson(`${gw.url}/auth/signup`, { email: 'bob@example.com', password: 'short' });
    assert.equal(short.status, 400);
    assert.equal(((await short.json()) as { error: { param: string } }).error.param, 'password');
    const extra = await postJson(`${gw.url}/auth/signup`, { email: 'bob@example.com', password: PASSWORD, role: 'admin' });
    assert.equal(extra.status, 400);
    assert.equal(await t.db('users').where({ email: 'bob@example.com' }).first(), undefined, 'nothing was created');
  });

  it('rotates the refresh session and revokes every session when a rotated token is replayed', async () => {
    const session = await logIn(gw.url, 'alice@example.com', PASSWORD);
    const first = await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: session.cookie } });
    assert.equal(first.status, 200);
    const rotated = (first.headers.get('set-cookie') ?? '').split(';')[0]!;
    assert.notEqual(rotated, session.cookie);
    const replay = await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: session.cookie } });
    assert.equal(replay.status, 401);
    const afterReplay = await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: rotated } });
    assert.equal(afterReplay.status, 401, 'the replay revoked the rotated session too');

    const fresh = await logIn(gw.url, 'alice@example.com', PASSWORD);
    const out = await fetch(`${gw.url}/auth/logout`, { method: 'POST', headers: { cookie: fresh.cookie } });
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie') ?? '', /^gw_refresh=; Max-Age=0/);
    assert.equal((await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: fresh.cookie } })).status, 401);
  });

  it('GET /auth/me answers the access token\'s own account, fresh from the database; an API key is refused', async () => {
    const session = await logIn(gw.url, 'alice@example.com', PASSWORD);
    const me = await fetch(`${gw.url}/auth/me`, { headers: { authorization: `Bearer ${session.accessToken}` } });
    assert.equal(me.status, 200);
    const account = (await me.json()) as { id: number; email: string; role: string; permissions: string[] };
    assert.equal(account.email, 'alice@example.com');
    assert.deepEqual(account.permissions, []);
    await t.db('users').where({ id: account.id }).update({ permissions: ['agent.use'] });
    const again = (await (await fetch(`${gw.url}/auth/me`, { headers: { authorization: `Bearer ${session.accessToken}` } })).json()) as { permissions: string[] };
    assert.deepEqual(again.permissions, ['agent.use'], 'a permission change shows at once');
    assert.ok(!JSON.stringify(account).includes('password'), 'no password hash');
    assert.equal((await fetch(`${gw.url}/auth/me`)).status, 401);
    assert.equal((await fetch(`${gw.url}/auth/me`, { headers: { authorization: 'Bearer gk_not-an-access-token' } })).status, 401);
  });

  it('issues API keys shown once and stored hashed; a key serves only the models its role may see', async () => {
    const session = await logIn(gw.url, 'alice@example.com', PASSWORD);
    const created = await postJson(`${gw.url}/auth/api-keys`, { name: 'laptop', expires_at: null }, { authorization: `Bearer ${session.accessToken}` });
    assert.equal(created.status, 201);
    const issued = (await created.json()) as { id: number; key: string; prefix: string };
    assert.match(issued.key, /^gk_[A-Za-z0-9_-]{43}$/);
    assert.ok(issued.key.startsWith(issued.prefix));
    const row = await t.db('api_keys').where({ id: issued.id }).first<{ key_hash: string; prefix: string }>();
    assert.equal(row.key_hash, hashSecret(issued.key));
    const listed = await fetch(`${gw.url}/auth/api-keys`, { headers: { authorization: `Bearer ${session.accessToken}` } });
    const listing = JSON.stringify(await listed.json());
    assert.ok(listing.includes(issued.prefix) && !listing.includes(issued.key), 'the listing shows the prefix, never the key');

    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: issued.key, maxRetries: 0 });
    const ok = await client.chat.completions.create({ model: 'open-model', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(ok.object, 'chat.completion');
    await assert.rejects(client.chat.completions.create({ model: 'pro-model', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.NotFoundError);
    assert.deepEqual((await client.models.list()).data.map((m) => m.id), ['open-model']);

    await t.db('users').where({ email: 'alice@example.com' }).update({ role: 'pro', updated_at: t.db.fn.now() });
    await eventually(async () => (await client.models.list()).data.length === 2, 'the key cache to see the new role');
    const pro = await client.chat.completions.create({ model: 'pro-model', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(pro.object, 'chat.completion');
    await assert.rejects(client.chat.completions.create({ model: 'admin-model', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.NotFoundError);

    const bad = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'gk_not-a-key', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: 'open-model', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.AuthenticationError);
    assert.deepEqual((await bad.models.list()).data.map((m) => m.id), ['open-model'], 'an invalid key lists what anyone may see');
    const anonymous = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(anonymous.status, 401);

    const revoke = await fetch(`${gw.url}/auth/api-keys/${issued.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${session.accessToken}` } });
    assert.equal(revoke.status, 204);
    await assert.rejects(client.chat.completions.create({ model: 'open-model', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.AuthenticationError, 'revocation applies at once');
    const failure = gw.logs.lines.find((l) => l.event === 'auth_failure' && l.reason === 'revoked');
    assert.ok(failure, 'the revoked key is logged as auth_failure');
    assert.ok(!JSON.stringify(gw.logs.lines).includes(issued.key), 'the key never appears in logs');
  });

  it('refuses expired keys, keys of suspended accounts, and key management without an access token', async () => {
    const session = await logIn(gw.url, 'alice@example.com', PASSWORD);
    const key = await createKey(gw.url, session, 'soon expired');
    await t.db('api_keys').where({ key_hash: hashSecret(key) }).update({ expires_at: new Date(Date.now() - 1000), updated_at: t.db.fn.now() });
    const call = () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'open-model', messages: [{ role: 'user', content: 'x' }] }) });
    await eventually(async () => (await call()).status === 401, 'the expired key to be refused');
    assert.ok(gw.logs.lines.some((l) => l.event === 'auth_failure' && l.reason === 'expired'));

    const past = await postJson(`${gw.url}/auth/api-keys`, { name: 'x', expires_at: '2001-01-01T00:00:00Z' }, { authorization: `Bearer ${session.accessToken}` });
    assert.equal(past.status, 400);
    assert.equal((await postJson(`${gw.url}/auth/api-keys`, { name: 'x' }, { authorization: `Bearer ${key}` })).status, 401, 'an API key is not an access token');
    assert.equal((await fetch(`${gw.url}/auth/api-keys/999999`, { method: 'DELETE', headers: { authorization: `Bearer ${session.accessToken}` } })).status, 404);

    const live = await createKey(gw.url, session, 'live');
    await t.db('users').where({ email: 'alice@example.com' }).update({ suspended_at: t.db.fn.now(), updated_at: t.db.fn.now() });
    await eventually(async () => (await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${live}` }, body: '{}' })).status === 401, 'the suspended account to be refused');
    assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'alice@example.com', password: PASSWORD })).status, 403);
    await t.db('users').where({ email: 'alice@example.com' }).update({ suspended_at: null, updated_at: t.db.fn.now() });
  });

  it('promotes an ADMIN_EMAILS account from free to admin at login; its access token opens the admin API', async () => {
    const session = await signUpAndLogIn(gw.url, t.db, 'boss@example.com');
    const user = await t.db('users').where({ email: 'boss@example.com' }).first<{ role: string }>();
    assert.equal(user.role, 'admin');
    assert.ok(gw.logs.lines.some((l) => l.event === 'admin_email_promotion'));
    const blocks = await fetch(`${gw.url}/admin/auth-blocks`, { headers: { authorization: `Bearer ${session.accessToken}` } });
    assert.equal(blocks.status, 200);
    assert.deepEqual(await blocks.json(), { data: [] });

    const alice = await logIn(gw.url, 'alice@example.com', PASSWORD);
    assert.equal((await fetch(`${gw.url}/admin/auth-blocks`, { headers: { authorization: `Bearer ${alice.accessToken}` } })).status, 403);
    assert.equal((await fetch(`${gw.url}/admin/auth-blocks`)).status, 401);

    await t.db('users').where({ email: 'boss@example.com' }).update({ role: 'pro', updated_at: t.db.fn.now() });
    assert.equal((await fetch(`${gw.url}/admin/auth-blocks`, { headers: { authorization: `Bearer ${session.accessToken}` } })).status, 403, 'a demoted admin loses access before the token expires');
  });

  it('rate-limits logins per e-mail with 429 and records the attempts', async () => {
    let last = 0;
    for (let i = 0; i < 11; i += 1) last = (await postJson(`${gw.url}/auth/login`, { email: 'carol@example.com', password: 'wrong password' })).status;
    assert.equal(last, 429);
    const outcomes = await t.db('login_events').where({ email: 'carol@example.com' }).select<Array<{ outcome: string }>>('outcome');
    assert.equal(outcomes.filter((o) => o.outcome === 'unknown_email').length, 10);
    assert.equal(outcomes.filter((o) => o.outcome === 'rate_limited').length, 1);
  });
});
