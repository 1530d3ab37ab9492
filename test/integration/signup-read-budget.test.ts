/**
 * The sign-up switch's read budget against a real PostgreSQL made slow: while another session
 * holds an exclusive lock on `site_settings`, the gateway's settings read cannot answer within
 * 1 second, so sign-up is closed (403, no account, `/site-config` reports it closed); once the
 * lock is released the next read (every 5 seconds) reopens it.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { postJson } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { waitFor } from '../support/wait';

describe('sign-up when the switch cannot be read within 1 second', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    t = await freshDatabase();
    gw = await startTestGateway({ db: t.db, env: { SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' } });
  });
  after(async () => {
    await gw?.close();
    await t?.drop();
  });

  async function signupOpen(): Promise<boolean> {
    const res = await fetch(`${gw.url}/site-config`);
    return ((await res.json()) as { features: { public_signup: boolean } }).features.public_signup;
  }

  it('is closed while PostgreSQL holds the settings read past the budget, and reopens on the next read', async () => {
    assert.equal(await signupOpen(), true);
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => { locked = resolve; });
    const holder = t.db.transaction(async (trx: Knex.Transaction) => {
      await trx.raw('lock table site_settings in access exclusive mode');
      locked();
      await released;
    });
    try {
      await lockTaken;
      await waitFor(async () => !(await signupOpen()), 'sign-up closed by a slow settings read', 15_000);
      const refused = await postJson(`${gw.url}/auth/signup`, { email: 'slow@example.com', password: 'correct horse battery' });
      assert.equal(refused.status, 403);
      assert.match(((await refused.json()) as { error: { message: string } }).error.message, /cannot be read/);
      assert.ok(gw.logs.lines.some((l) => l.event === 'site_settings_unreadable'), 'the closure is logged');
    } finally {
      release();
      await holder;
    }
    assert.equal(await t.db('users').where({ email: 'slow@example.com' }).first(), undefined, 'no account was created');
    await waitFor(() => signupOpen(), 'sign-up reopened once the settings answer', 15_000);
    assert.equal((await postJson(`${gw.url}/auth/signup`, { email: 'slow@example.com', password: 'correct horse battery' })).status, 201);
  });
});
