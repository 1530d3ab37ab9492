/**
 * The refresh cookie is `Secure` unless `COOKIE_SECURE=false` (the default is true): on login, on
 * refresh rotation and when logout clears it. (`COOKIE_SECURE=false` is pinned by identity.test.ts.)
 */
import assert from 'node:assert/strict';
import { postJson, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';

const SECURE_COOKIE = /^gw_refresh=grt_[A-Za-z0-9_-]+; Max-Age=2592000; Path=\/auth; HttpOnly; SameSite=Strict; Secure$/;

describe('refresh cookie with COOKIE_SECURE unset', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    // No COOKIE_SECURE in the environment: the default applies.
    gw = await startTestGateway({ db: t.db, env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' } });
  });
  after(async () => {
    await gw?.close();
    await t?.drop();
  });

  it('is Secure on login, on refresh and when logout clears it', async () => {
    await signUpAndLogIn(gw.url, t.db, 'secure@example.com');
    const login = await postJson(`${gw.url}/auth/login`, { email: 'secure@example.com', password: 'correct horse battery' });
    assert.equal(login.status, 200);
    const loginCookie = login.headers.get('set-cookie') ?? '';
    assert.match(loginCookie, SECURE_COOKIE);

    const refreshed = await fetch(`${gw.url}/auth/refresh`, { method: 'POST', headers: { cookie: loginCookie.split(';')[0]! } });
    assert.equal(refreshed.status, 200);
    const rotated = refreshed.headers.get('set-cookie') ?? '';
    assert.match(rotated, SECURE_COOKIE);

    const out = await fetch(`${gw.url}/auth/logout`, { method: 'POST', headers: { cookie: rotated.split(';')[0]! } });
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie') ?? '', /^gw_refresh=; Max-Age=0; Path=\/auth; HttpOnly; SameSite=Strict; Secure$/);
  });
});
