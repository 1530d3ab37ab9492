/**
 * Identity admin endpoints against real PostgreSQL (login-event purge, hard delete), sign-up
 * closed by the runtime switch (403, nothing created), and every admin endpoint's answer without
 * a database (500 `Database not configured`, after authentication).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey, logIn, postJson, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';

const ADMIN = { authorization: 'Bearer admin-token-for-tests' };

describe('identity admin (PostgreSQL)', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    gw = await startTestGateway({ db: t.db, env: { USER_AUTH_ENABLED: 'true', ADMIN_TOKEN: 'admin-token-for-tests', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', PERMANENT_DELETION_ENABLED: 'true', ADMIN_EMAILS: 'boss@example.com', SIGNUP_NOTIFY_EMAILS: 'ops@example.com, audit@example.com' } });
  });
  after(async () => {
    await gw?.close();
    await t?.drop();
  });

  it('lists users and changes role, permissions and suspension; the key follows at once', async () => {
    const session = await signUpAndLogIn(gw.url, t.db, 'hank@example.com');
    const key = await createKey(gw.url, session);
    const list = await fetch(`${gw.url}/admin/users?email=HANK`, { headers: ADMIN });
    const listed = ((await list.json()) as { data: Array<{ id: number; email: string; role: string; permissions: string[]; suspended: boolean }> }).data;
    assert.deepEqual(listed.map((u) => [u.email, u.role, u.permissions, u.suspended]), [['hank@example.com', 'free', [], false]]);
    const id = listed[0]!.id;
    const patch = (body: unknown) => fetch(`${gw.url}/admin/users/${id}`, { method: 'PATCH', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const changed = await patch({ role: 'internal', permissions: ['agent.use', 'agent.use'] });
    assert.equal(changed.status, 200);
    const view = (await changed.json()) as { role: string; permissions: string[] };
    assert.deepEqual([view.role, view.permissions], ['internal', ['agent.use']]);
    for (const bad of [{ role: 'root' }, { permissions: ['everything'] }, {}, { suspended: 'yes' }]) {
      assert.equal((await patch(bad)).status, 400, JSON.stringify(bad));
    }
    assert.equal((await fetch(`${gw.url}/admin/users/999999`, { method: 'PATCH', headers: { ...ADMIN, 'content-type': 'application/json' }, body: '{"role":"pro"}' })).status, 404);

    const call = () => fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal((await call()).status, 200);
    assert.equal((await patch({ suspended: true })).status, 200);
    const refused = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: '{}' });
    assert.equal(refused.status, 401, 'suspension applies to the key at once');
    assert.equal((await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: session.cookie } })).status, 401, 'sessions were revoked');
    assert.equal((await patch({ suspended: false })).status, 200);
    assert.notEqual((await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: '{}' })).status, 401);
  });

  it('purges login events by user or by age, and validates the query', async () => {
    await signUpAndLogIn(gw.url, t.db, 'erin@example.com');
    await postJson(`${gw.url}/auth/login`, { email: 'erin@example.com', password: 'wrong password' });
    await postJson(`${gw.url}/auth/login`, { email: 'nobody@example.com', password: 'wrong password' });
    await t.db('login_events').where({ email: 'nobody@example.com' }).update({ created_at: new Date(Date.now() - 10 * 86_400_000) });
    const user = await t.db('users').where({ email: 'erin@example.com' }).first<{ id: string }>();

    assert.equal((await fetch(`${gw.url}/admin/login-events`, { method: 'DELETE', headers: ADMIN })).status, 400);
    assert.equal((await fetch(`${gw.url}/admin/login-events?older_than_days=-1`, { method: 'DELETE', headers: ADMIN })).status, 400);
    const old = await fetch(`${gw.url}/admin/login-events?older_than_days=7`, { method: 'DELETE', headers: ADMIN });
    assert.deepEqual(await old.json(), { deleted: 1 });
    const mine = await fetch(`${gw.url}/admin/login-events?user_id=${user.id}`, { method: 'DELETE', headers: ADMIN });
    assert.deepEqual(await mine.json(), { deleted: 2 });
    assert.equal(await t.db('login_events').whereIn('email', ['erin@example.com', 'nobody@example.com']).first(), undefined);
  });

  it('hard-deletes a user with their keys and request rows; unknown users are 404', async () => {
    await signUpAndLogIn(gw.url, t.db, 'frank@example.com');
    const user = await t.db('users').where({ email: 'frank@example.com' }).first<{ id: string }>();
    await t.db('api_logs').insert({ request_id: 'r1', user_id: user.id, surface: 'chat', status: 200 });
    const res = await fetch(`${gw.url}/admin/users/${user.id}/hard-delete`, { method: 'POST', headers: ADMIN });
    assert.deepEqual(await res.json(), { user_id: Number(user.id), deleted: true, api_logs_deleted: 1 });
    assert.equal(await t.db('users').where({ id: user.id }).first(), undefined);
    assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'frank@example.com', password: 'correct horse battery' })).status, 401);
    assert.equal((await fetch(`${gw.url}/admin/users/${user.id}/hard-delete`, { method: 'POST', headers: ADMIN })).status, 404);
    assert.equal((await fetch(`${gw.url}/admin/users/abc/hard-delete`, { method: 'POST', headers: ADMIN })).status, 400);
  });

  it('closes sign-up through the runtime switch (403, no account) and reopens it', async () => {
    const patch = (body: unknown) => fetch(`${gw.url}/admin/settings`, { method: 'PATCH', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const closed = await patch({ signup_enabled: false });
    assert.equal(closed.status, 200);
    assert.deepEqual(((await closed.json()) as Record<string, unknown>).signup_enabled, { stored: false, environment: true, effective: false });
    assert.equal((await patch({ signup_enabled: 'no' })).status, 400);
    assert.equal((await patch({ unknown_switch: true })).status, 400);
    const stored = await t.db('site_settings').where({ key: 'signup_enabled' }).first<{ value: unknown }>();
    assert.equal(stored.value, false);
    const refused = await postJson(`${gw.url}/auth/signup`, { email: 'gina@example.com', password: 'correct horse battery' });
    assert.equal(refused.status, 403);
    assert.equal(await t.db('users').where({ email: 'gina@example.com' }).first(), undefined);
    assert.equal((await patch({ signup_enabled: null })).status, 200);
    assert.equal((await postJson(`${gw.url}/auth/signup`, { email: 'gina@example.com', password: 'correct horse battery' })).status, 201);
    const notified = await t.db('email_outbox').where({ kind: 'signup_notice' }).whereRaw('body like ?', ['%gina@example.com%']).orderBy('recipient').pluck<string[]>('recipient');
    assert.deepEqual(notified, ['audit@example.com', 'ops@example.com'], 'SIGNUP_NOTIFY_EMAILS wins over ADMIN_EMAILS');
    await logIn(gw.url, 'gina@example.com', 'correct horse battery');
  });
});

describe('sign-up with an active manifest that disables it', function () {
  this.timeout(20_000);
  it('answers 403 to sign-up, and 400 to an admin change reopening it', async () => {
    const t = await freshDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'manifest-'));
    writeFileSync(join(dir, 'manifest.yaml'), 'schema_version: 1\nfeatures:\n  public_signup: false\n');
    const gw = await startTestGateway({
      db: t.db,
      env: { ADMIN_TOKEN: 'admin-token-for-tests', DISTRIBUTION_CONFIG_PATH: join(dir, 'manifest.yaml'), DISTRIBUTION_CONFIG_MODE: 'active', SIGNUP_ENABLED: 'true' },
    });
    try {
      const signup = await postJson(`${gw.url}/auth/signup`, { email: 'x@example.com', password: 'correct horse battery' });
      assert.equal(signup.status, 403);
      const reopen = await fetch(`${gw.url}/admin/settings`, { method: 'PATCH', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ signup_enabled: true }) });
      assert.equal(reopen.status, 400);
      assert.equal(((await reopen.json()) as { error: { param: string } }).error.param, 'signup_enabled');
      assert.equal(await t.db('site_settings').where({ key: 'signup_enabled' }).first(), undefined, 'nothing stored');
      assert.equal(await t.db('users').first(), undefined);
    } finally {
      await gw.close();
      await t.drop();
    }
  });
});

describe('identity admin without a database', function () {
  this.timeout(20_000);
  it('authenticates first (401), then answers 500 Database not configured', async () => {
    const gw = await startTestGateway({ env: { ADMIN_TOKEN: 'admin-token-for-tests' } });
    try {
      assert.equal((await fetch(`${gw.url}/admin/auth-blocks`)).status, 401);
      for (const [method, path] of [['GET', '/admin/auth-blocks'], ['POST', '/admin/auth-blocks/clear'], ['DELETE', '/admin/login-events?user_id=1'], ['POST', '/admin/users/1/hard-delete']] as const) {
        const res = await fetch(`${gw.url}${path}`, { method, headers: ADMIN });
        assert.equal(res.status, 500, path);
        assert.equal(((await res.json()) as { error: { message: string } }).error.message, 'Database not configured');
      }
      assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'a@example.com', password: 'x' })).status, 500);
    } finally {
      await gw.close();
    }
  });
});
