/**
 * Signing-key rotation and support impersonation (docs/identity.md "Signing keys",
 * "Impersonation") across a real gateway and control-plane API sharing one PostgreSQL database:
 * tokens signed before a rotation keep verifying on both, new tokens carry the new `kid`, a forged
 * or retired key is 401; an impersonation token acts as the user (gateway and API), cannot mint a
 * key or change the password, is refused once the administrator logs out, is listed on the user's
 * account and audited; only an operator signed in with their own account may start one.
 */
import assert from 'node:assert/strict';
import { jwtKid, signJwt } from '../../lib/identity/jwt';
import { postJson, signUpAndLogIn, logIn, type Session } from '../support/accounts';
import { ADMIN_TOKEN } from '../support/admin';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';

const SYNC = '0.1';
const PASSWORD = 'correct horse battery';

async function call(url: string, token: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { authorization: `Bearer ${token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('identity: signing-key rotation and impersonation (gateway + API, PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let gw: TestGateway;
  let api: TestApi;
  let admin: Session;
  let user: Session;
  let userId: number;
  let adminId: number;
  let beforeRotation: string;
  let rotatedKid: string;

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db, env: { AUTH_SIGNING_KEY_SYNC_SECONDS: SYNC } });
    gw = await startTestGateway({
      db: t.db,
      env: {
        USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', COOKIE_SECURE: 'false',
        AUTH_SIGNING_KEY_SYNC_SECONDS: SYNC, AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1',
      },
    });
    await signUpAndLogIn(gw.url, t.db, 'boss@example.com', PASSWORD);
    await t.db('users').where({ email: 'boss@example.com' }).update({ role: 'admin', permissions: ['agent.use', 'agent.admin'] });
    admin = await logIn(gw.url, 'boss@example.com', PASSWORD);
    user = await signUpAndLogIn(gw.url, t.db, 'alice@example.com', PASSWORD);
    await t.db('users').where({ email: 'alice@example.com' }).update({ permissions: ['agent.use'] });
    userId = Number((await t.db('users').where({ email: 'alice@example.com' }).first<{ id: string }>('id')).id);
    adminId = Number((await t.db('users').where({ email: 'boss@example.com' }).first<{ id: string }>('id')).id);
    beforeRotation = user.accessToken;
  });
  after(async () => {
    await gw?.close();
    await api?.close();
    await t?.drop();
  });

  it('rotates: tokens signed before still verify on the gateway and the API; new tokens carry the new kid; audited', async () => {
    assert.equal(jwtKid(beforeRotation), undefined, 'the bootstrap key signs without a kid');
    const rotate = await call(`${api.url}/admin/agent/signing-keys/rotate`, admin.accessToken, { body: { reason: 'yearly rotation' } });
    assert.equal(rotate.status, 200, await rotate.clone().text());
    const rotation = (await rotate.json()) as { kid: string; activates_at: string; superseded: { kid: string; retires_at: string } };
    rotatedKid = rotation.kid;
    assert.equal(rotation.superseded.kid, 'bootstrap');
    assert.equal(Date.parse(rotation.superseded.retires_at) - Date.parse(rotation.activates_at), 900_000, 'the old key verifies for the longest token lifetime');
    assert.ok(!JSON.stringify(rotation).includes(TEST_JWT_SECRET));

    await sleep(Math.max(0, Date.parse(rotation.activates_at) - Date.now()) + 300);
    assert.equal((await call(`${gw.url}/auth/me`, beforeRotation)).status, 200, 'gateway: a token from before the rotation');
    assert.equal((await call(`${api.url}/v1/agent/variables`, beforeRotation)).status, 200, 'API: a token from before the rotation');

    user = await logIn(gw.url, 'alice@example.com', PASSWORD);
    admin = await logIn(gw.url, 'boss@example.com', PASSWORD);
    assert.equal(jwtKid(user.accessToken), rotatedKid, 'a new token carries the new kid');
    assert.equal((await call(`${api.url}/v1/agent/variables`, user.accessToken)).status, 200, 'the API verifies the new key too');
    const keys = (await (await call(`${api.url}/admin/agent/signing-keys`, admin.accessToken)).json()) as { signing_kid: string; data: Array<Record<string, unknown>> };
    assert.equal(keys.signing_kid, rotatedKid);
    assert.ok(!JSON.stringify(keys).includes('sealed'), 'no secret, sealed or not, is shown');
    const stored = await t.db('auth_signing_keys').where({ kid: rotatedKid }).first<{ sealed_secret: string }>();
    assert.match(stored.sealed_secret, /^v1\./, 'sealed at rest');
    const audit = await t.db('agent_audit_log').where({ action: 'agent.signing_key.rotate' }).first<{ category: string; actor_user_id: string; reason: string }>();
    assert.deepEqual([audit.category, Number(audit.actor_user_id), audit.reason], ['identity', adminId, 'yearly rotation']);
  });

  it('refuses a forged kid: an unknown key id, or a known kid with another secret (401)', async () => {
    const claims = { sub: String(userId), role: 'free', typ: 'access' };
    for (const forged of [signJwt(claims, { secret: TEST_JWT_SECRET, kid: 'kNotAKeyOfOurs' }, 600), signJwt(claims, { secret: 'x'.repeat(43), kid: rotatedKid }, 600)]) {
      assert.equal((await call(`${gw.url}/auth/me`, forged)).status, 401);
      assert.equal((await call(`${api.url}/v1/agent/variables`, forged)).status, 401);
    }
  });

  it('impersonation: the token comes in a header, acts as the user on the gateway and the API, and the user sees it', async () => {
    assert.equal((await call(`${api.url}/v1/agent/variables/SUPPORT_CASE`, user.accessToken, { method: 'PUT', body: { value: 'v' } })).status, 200);
    const started = await call(`${api.url}/admin/agent/users/${userId}/impersonate`, admin.accessToken, { body: { reason: 'ticket 4711' } });
    assert.equal(started.status, 201, await started.clone().text());
    const token = started.headers.get('x-impersonation-token') ?? '';
    const body = await started.text();
    assert.ok(token.length > 0 && !body.includes(token), 'in the header, never in the body');
    const me = (await (await call(`${gw.url}/auth/me`, token)).json()) as { id: number; email: string };
    assert.deepEqual([me.id, me.email], [userId, 'alice@example.com']);
    const variables = (await (await call(`${api.url}/v1/agent/variables`, token)).json()) as { variables: Array<{ name: string }> };
    assert.deepEqual(variables.variables.map((v) => v.name), ['SUPPORT_CASE']);

    const seen = (await (await call(`${gw.url}/auth/impersonations`, user.accessToken)).json()) as { data: Array<Record<string, unknown>> };
    assert.equal(seen.data.length, 1);
    assert.equal(seen.data[0]!.admin_user_id, adminId);
    assert.equal(seen.data[0]!.admin_email, 'boss@example.com');
    assert.equal(seen.data[0]!.reason, 'ticket 4711');
    assert.equal(Date.parse(seen.data[0]!.expires_at as string) - Date.parse(seen.data[0]!.started_at as string), 900_000);
    assert.equal(seen.data[0]!.uses, 2, 'each honoured use is counted');
    const audit = await t.db('agent_audit_log').where({ action: 'agent.impersonation.start' }).first<{ target_id: string; actor_user_id: string }>();
    assert.deepEqual([audit.target_id, Number(audit.actor_user_id)], [String(userId), adminId]);
  });

  it('impersonation: minting or revoking a key and changing the password are 403; operator and admin routes are 403', async () => {
    const started = await call(`${api.url}/admin/agent/users/${userId}/impersonate`, admin.accessToken, { body: {} });
    const token = started.headers.get('x-impersonation-token') ?? '';
    const mint = await call(`${gw.url}/auth/api-keys`, token, { body: { name: 'stolen' } });
    assert.equal(mint.status, 403, await mint.clone().text());
    assert.equal((await call(`${gw.url}/auth/api-keys/1`, token, { method: 'DELETE' })).status, 403);
    assert.equal((await call(`${gw.url}/auth/password`, token, { body: { current_password: PASSWORD, new_password: 'a brand new password' } })).status, 403);
    assert.equal(await t.db('api_keys').count<Array<{ count: string }>>('* as count').then((r) => Number(r[0]!.count)), 0, 'no key was minted');
    assert.equal((await call(`${api.url}/admin/agent/signing-keys`, token)).status, 403);
    assert.equal((await call(`${gw.url}/admin/users`, token)).status, 403);
    // The user's own sign-in may do what the impersonation may not.
    assert.equal((await call(`${gw.url}/auth/api-keys`, user.accessToken, { body: { name: 'mine' } })).status, 201);
  });

  it('impersonation: only an operator signed in with their own account; non-admins, ADMIN_TOKEN and admins as targets are refused', async () => {
    assert.equal((await call(`${api.url}/admin/agent/users/${adminId}/impersonate`, user.accessToken, { body: {} })).status, 403);
    assert.equal((await call(`${api.url}/admin/agent/users/${userId}/impersonate`, user.accessToken, { body: {} })).status, 403, 'a non-admin');
    assert.equal((await call(`${api.url}/admin/agent/users/${userId}/impersonate`, ADMIN_TOKEN, { body: {} })).status, 403, 'ADMIN_TOKEN has no sign-in to end with');
    assert.equal((await call(`${api.url}/admin/agent/users/999999/impersonate`, admin.accessToken, { body: {} })).status, 404);
    assert.equal((await call(`${api.url}/admin/agent/users/abc/impersonate`, admin.accessToken, { body: {} })).status, 400);
    assert.equal((await call(`${api.url}/admin/agent/users/${userId}/impersonate`, admin.accessToken, { body: { extra: 1 } })).status, 400);
  });

  it('impersonation ends with the administrator\'s sign-in: after logout the token is 401; ending one early is audited', async () => {
    const early = await call(`${api.url}/admin/agent/users/${userId}/impersonate`, admin.accessToken, { body: {} });
    const earlyToken = early.headers.get('x-impersonation-token') ?? '';
    const { impersonation_id: earlyId } = (await early.json()) as { impersonation_id: number };
    assert.equal((await call(`${api.url}/admin/agent/impersonations/${earlyId}/end`, admin.accessToken, { body: {} })).status, 200);
    assert.equal((await call(`${gw.url}/auth/me`, earlyToken)).status, 401, 'ended early');
    assert.ok(await t.db('agent_audit_log').where({ action: 'agent.impersonation.end' }).first());

    const started = await call(`${api.url}/admin/agent/users/${userId}/impersonate`, admin.accessToken, { body: {} });
    const token = started.headers.get('x-impersonation-token') ?? '';
    assert.equal((await call(`${gw.url}/auth/me`, token)).status, 200);
    const logout = await fetch(`${gw.url}/auth/logout`, { method: 'POST', headers: { cookie: admin.cookie } });
    assert.equal(logout.status, 204);
    assert.equal((await call(`${gw.url}/auth/me`, token)).status, 401, 'gateway');
    assert.equal((await call(`${api.url}/v1/agent/variables`, token)).status, 401, 'API');
  });

  it('the user changes their own password with their own sign-in (current password required)', async () => {
    assert.equal((await call(`${gw.url}/auth/password`, user.accessToken, { body: { current_password: 'wrong password!', new_password: 'a brand new password' } })).status, 400);
    assert.equal((await call(`${gw.url}/auth/password`, user.accessToken, { body: { current_password: PASSWORD, new_password: 'short' } })).status, 400);
    assert.equal((await call(`${gw.url}/auth/password`, user.accessToken, { body: { current_password: PASSWORD, new_password: 'a brand new password' } })).status, 204);
    assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'alice@example.com', password: 'a brand new password' })).status, 200);
  });

  it('a retired key verifies nothing: once the bootstrap key\'s retirement time has passed, its tokens are 401', async () => {
    assert.equal((await call(`${gw.url}/auth/me`, beforeRotation)).status, 200);
    // The retirement time is the rotation plus the longest token lifetime; move it into the past instead of waiting.
    await t.db('auth_signing_keys').where({ kid: 'bootstrap' }).update({ retires_at: t.db.raw("now() - interval '1 second'") });
    await sleep(400);
    assert.equal((await call(`${gw.url}/auth/me`, beforeRotation)).status, 401, 'gateway');
    assert.equal((await call(`${api.url}/v1/agent/variables`, beforeRotation)).status, 401, 'API');
    assert.equal((await call(`${gw.url}/auth/me`, user.accessToken)).status, 200, 'the current key still verifies');
  });
});
