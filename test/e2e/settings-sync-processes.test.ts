/**
 * Settings sync across real processes (docs/agent-admin.md "Settings"): two built
 * control-plane APIs (`node dist/api/main.js`) on one database. A change saved through one is
 * answered by the other within 5 s, a credential saved through one is readable (configured) by the
 * other, and the secret appears in neither process's output.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { freeLoopbackPort as freePort } from '../../ops/dev/free-port';
import { join } from 'node:path';
import { admin, ADMIN_TOKEN } from '../support/admin';
import { TEST_JWT_SECRET } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '../..');
const PASSWORD = 'process-sync-password-5521';


interface ApiProcess { child: ChildProcess; url: string; output(): string }

async function startApi(databaseUrl: string): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/api/main.js')], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH, DATABASE_URL: databaseUrl, API_HOST: '127.0.0.1', API_PORT: String(port), ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET,
      TEMPORAL_ADDRESS: '127.0.0.1:1', AGENT_SETTINGS_ENCRYPTION_KEY: 'process-sync-settings-key-of-32-bytes!!', LOG_LEVEL: 'debug',
    },
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { output += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { output += c; });
  await waitFor(() => output.includes('control-plane API listening') || child.exitCode !== null, 'API ready', 30_000);
  if (child.exitCode !== null) throw new Error(`the API exited:\n${output}`);
  return { child, url: `http://127.0.0.1:${port}`, output: () => output };
}

async function stop(api: ApiProcess | undefined): Promise<void> {
  if (!api || api.child.exitCode !== null) return;
  const exited = new Promise((resolve) => api.child.once('exit', resolve));
  api.child.kill('SIGTERM');
  await exited;
}

describe('settings sync between two built API processes (PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let a: ApiProcess | undefined;
  let b: ApiProcess | undefined;

  before(async () => {
    t = await freshDatabase();
    a = await startApi(t.url);
    b = await startApi(t.url);
  });
  after(async () => {
    await stop(a);
    await stop(b);
    await t?.drop();
  });

  type View = { settings: Record<string, { value?: unknown; configured?: boolean }> };

  it('a change saved through one process is answered by the other within 5 s, credentials included, and no secret in either log', async () => {
    const before = await admin<View>(b!, 'GET', '/admin/agent/settings');
    assert.equal(before.body.settings.workspace_download_max_mib?.value, 1024);
    const saved = await admin<View>(a!, 'PUT', '/admin/agent/settings', { settings: { workspace_download_max_mib: 333, database_tool_password: PASSWORD } });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    // No request reaches the second process meanwhile: its own poll must apply the change (its log line names the revision).
    await waitFor(() => /"event":"agent_settings_applied"[^\n]*"revision":"1"/.test(b!.output()), 'the second process applies revision 1 by itself', 5000);
    const seen = await admin<View>(b!, 'GET', '/admin/agent/settings');
    assert.equal(seen.body.settings.workspace_download_max_mib?.value, 333);
    assert.equal(seen.body.settings.database_tool_password?.configured, true);
    assert.ok(!a!.output().includes(PASSWORD) && !b!.output().includes(PASSWORD), 'the password is in no log');
  });
});
