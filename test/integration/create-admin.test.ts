/**
 * The operator script `ops/admin/create-admin.ts`, run as a process against a real database:
 * it creates a verified administrator (password from stdin), promotes an existing account, and
 * refuses bad input without changing anything. The administrator then logs in to the gateway, and
 * holds `agent.use`: a key they make is accepted on the control plane's owner routes at once.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createKey, logIn, postJson } from '../support/accounts';
import { startTestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startTestGateway } from '../support/gateway';

const SCRIPT = join(__dirname, '../../ops/admin/create-admin.ts');

function run(url: string, args: string[], input: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { input, env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('ops/admin/create-admin.ts', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  before(async () => {
    t = await freshDatabase();
  });
  after(async () => {
    await t?.drop();
  });

  it('creates an administrator who can log in, use the admin API and start agent chats (agent.use)', async () => {
    const result = run(t.url, ['--email', 'root@example.com', '--password-stdin'], 'a long enough password\n');
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /Created administrator root@example\.com/);
    assert.ok(!result.stdout.includes('a long enough password'));
    const gw = await startTestGateway({ db: t.db, env: { USER_AUTH_ENABLED: 'true' } });
    try {
      const session = await logIn(gw.url, 'root@example.com', 'a long enough password');
      assert.equal((await fetch(`${gw.url}/admin/auth-blocks`, { headers: { authorization: `Bearer ${session.accessToken}` } })).status, 200);
      assert.equal((await postJson(`${gw.url}/auth/login`, { email: 'root@example.com', password: 'wrong password' })).status, 401);
      const key = await createKey(gw.url, session);
      const api = await startTestApi({ db: t.db });
      try {
        // An owner route: 403 without agent.use.
        const usage = await fetch(`${api.url}/v1/agent/usage/runs?days=7`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(usage.status, 200, await usage.clone().text());
      } finally {
        await api.close();
      }
    } finally {
      await gw.close();
    }
  });

  it('promotes an existing account (adding agent.use to its permissions), and refuses a short password or a bad e-mail changing nothing', async () => {
    await t.db('users').insert({ email: 'member@example.com', password_hash: 'x', role: 'free', permissions: ['agent.admin'] });
    assert.equal(run(t.url, ['--email', 'member@example.com', '--password-stdin'], 'short\n').status, 1);
    assert.equal((await t.db('users').where({ email: 'member@example.com' }).first<{ role: string }>()).role, 'free');
    const bad = run(t.url, ['--email', 'not-an-email', '--password-stdin'], 'a long enough password\n');
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /not an e-mail address/);
    const promoted = run(t.url, ['--email', 'MEMBER@example.com', '--password-stdin'], 'another long password\n');
    assert.equal(promoted.status, 0, promoted.stderr);
    const row = await t.db('users').where({ email: 'member@example.com' }).first<{ role: string; email_verified_at: Date | null; permissions: string[] }>();
    assert.equal(row.role, 'admin');
    assert.deepEqual(row.permissions, ['agent.admin', 'agent.use'], 'kept what it had, added agent.use');
    assert.equal(run(t.url, ['--email', 'member@example.com', '--password-stdin'], 'another long password\n').status, 0);
    assert.deepEqual((await t.db('users').where({ email: 'member@example.com' }).first<{ permissions: string[] }>()).permissions, ['agent.admin', 'agent.use'], 'not added twice');
    assert.ok(row.email_verified_at);
    const noEmail = run(t.url, ['--password-stdin'], 'x\n');
    assert.equal(noEmail.status, 1);
    assert.match(noEmail.stderr, /usage: npm run create-admin/);
  });
});
