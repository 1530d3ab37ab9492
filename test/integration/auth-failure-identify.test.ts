/**
 * `AUTH_FAILURE_IDENTIFY_CALLER`: an `auth_failure` line names the account of a failed key
 * (`user_id`) by default; with `false` it carries no account id. The lookup the flag turns off is in
 * the in-memory key cache, so neither setting reads `users` or `api_keys` while the request is
 * refused: that is checked under both, as a property of the refusal path, not of the flag.
 */
import assert from 'node:assert/strict';
import { createKey, signUpAndLogIn } from '../support/accounts';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

interface KeyRow { id: string; user_id: string }

describe('AUTH_FAILURE_IDENTIFY_CALLER', function () {
  this.timeout(30_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await upstream?.close();
    await t?.drop();
  });

  /** A gateway with the flag as given, and a revoked key of a fresh account (its user id too). */
  async function gatewayWithRevokedKey(identify: string, email: string): Promise<{ gw: TestGateway; key: string; userId: number }> {
    const gw = await startTestGateway({
      db: t.db,
      modelsYaml: `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}" }\n`,
      // A long key-cache refresh: no periodic key reads overlap the refused request.
      env: { USER_AUTH_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', AUTH_FAILURE_IDENTIFY_CALLER: identify, AUTH_KEY_REFRESH_SECONDS: '3600' },
    });
    const session = await signUpAndLogIn(gw.url, t.db, email);
    const key = await createKey(gw.url, session);
    const row = await t.db('api_keys').join('users', 'users.id', 'api_keys.user_id').where('users.email', email).first<KeyRow>('api_keys.id', 'api_keys.user_id');
    const revoked = await fetch(`${gw.url}/auth/api-keys/${row.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${session.accessToken}` } });
    assert.equal(revoked.status, 204);
    return { gw, key, userId: Number(row.user_id) };
  }

  /** Sends one chat request with `key`, returning its status and the SQL run meanwhile on the shared pool. */
  async function refusedChat(gw: TestGateway, key: string): Promise<{ status: number; queries: string[] }> {
    const queries: string[] = [];
    const listener = (q: { sql: string }) => queries.push(q.sql);
    t.db.on('query', listener);
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.arrayBuffer();
      return { status: res.status, queries };
    } finally {
      t.db.off('query', listener);
    }
  }

  const failureLine = (gw: TestGateway) => gw.logs.lines.find((l) => l.event === 'auth_failure' && l.reason === 'revoked');

  it('names the account of a failed key by default', async () => {
    const { gw, key, userId } = await gatewayWithRevokedKey('true', 'named@example.com');
    try {
      const { status, queries } = await refusedChat(gw, key);
      assert.equal(status, 401);
      assert.equal(failureLine(gw)?.user_id, userId);
      assert.deepEqual(queries.filter((sql) => /\b(users|api_keys)\b/.test(sql)), [], 'the account is named from memory, without a query');
    } finally {
      await gw.close();
    }
  });

  it('with false, logs the failure without user_id (and still queries nothing)', async () => {
    const { gw, key } = await gatewayWithRevokedKey('false', 'anonymous@example.com');
    try {
      const { status, queries } = await refusedChat(gw, key);
      assert.equal(status, 401);
      const line = failureLine(gw);
      assert.ok(line, 'the failure is still logged');
      assert.equal('user_id' in line, false, 'no account id in the auth_failure line');
      assert.deepEqual(queries.filter((sql) => /\b(users|api_keys)\b/.test(sql)), [], 'no database read on the refusal');
    } finally {
      await gw.close();
    }
  });
});
