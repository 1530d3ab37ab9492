/**
 * Every `DISTRIBUTION_CONFIG_MODE` on a real gateway process (`gateway/main.ts` as operators run
 * it, with a fresh PostgreSQL database), from an overlay directory (manifest, branding,
 * `config/models.yaml`, `config/routing.yaml`; docs/site-config.md):
 * - unset (dark by default) and `dark`: validated and logged only; neutral `/site-config`, bundled
 *   registry, sign-up open;
 * - `active`: the manifest's site and features, the overlay's models, sign-up closed by
 *   `features.public_signup: false` (403, no account) even with `SIGNUP_ENABLED=true`;
 * - `Active`, an empty value, `active` without a path: sign-up 403 (no account), `/site-config`
 *   503, exactly one warning at startup;
 * - `active` with a manifest that fails to load: CRITICAL, no models, `/site-config` 503.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { freshDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '../..');
const ADMIN_TOKEN = 'distribution-modes-admin-token';

interface Gateway { url: string; lines: Array<Record<string, unknown>>; stop(): Promise<void> }

async function startGateway(env: Record<string, string>, dbUrl: string): Promise<Gateway> {
  const port = await freeLoopbackPort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'gateway/main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '', GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), DATABASE_URL: dbUrl, LOG_LEVEL: 'info',
      SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ADMIN_TOKEN, REQUEST_LOG_SPOOL_DIR: mkdtempSync(join(tmpdir(), 'modes-spool-')), ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => output.includes('gateway listening') || child.exitCode !== null, 'the gateway listening', 60_000);
  if (child.exitCode !== null) throw new Error(`the gateway exited:\n${output}`);
  const lines = (): Array<Record<string, unknown>> => output.split('\n').flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  return {
    url: `http://127.0.0.1:${port}`,
    get lines() { return lines(); },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** An overlay directory: manifest (sign-up off, stats on), branding, its own models and routing files. */
function overlay(): string {
  const dir = mkdtempSync(join(tmpdir(), 'distribution-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config', 'models.yaml'), 'models:\n  - { id: overlay-chat, name: Overlay, provider: engine_a, base_url: "http://127.0.0.1:9" }\n');
  writeFileSync(join(dir, 'config', 'routing.yaml'), 'default_router: fixed\n');
  writeFileSync(join(dir, 'manifest.yaml'), `schema_version: 1
distribution: { id: acme, display_name: Acme AI }
site: { public_base_url: "https://ai.acme.example", support_email: help@acme.example }
features: { public_signup: false, public_stats: true }
`);
  return join(dir, 'manifest.yaml');
}

describe('distribution modes on a real gateway process', function () {
  this.timeout(180_000);
  let t: TestDatabase;
  let manifest: string;
  let counter = 0;

  before(async () => {
    t = await freshDatabase();
    manifest = overlay();
  });
  after(async () => {
    await t?.drop();
  });

  async function signUp(gw: Gateway): Promise<{ status: number; email: string; message?: string }> {
    const email = `mode-${++counter}@example.com`;
    const res = await fetch(`${gw.url}/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'correct horse battery' }) });
    const body = (await res.json()) as { error?: { message: string } };
    return { status: res.status, email, ...(body.error ? { message: body.error.message } : {}) };
  }
  const accountExists = async (email: string) => (await t.db('users').where({ email }).first()) !== undefined;
  const siteConfig = async (gw: Gateway) => {
    const res = await fetch(`${gw.url}/site-config`);
    return { status: res.status, body: (await res.json()) as { site?: { name: string }; features?: { public_signup: boolean }; error?: { message: string } } };
  };
  const models = async (gw: Gateway) => ((await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);

  for (const [label, env] of [['unset (dark by default)', () => ({ DISTRIBUTION_CONFIG_PATH: manifest })], ['dark', () => ({ DISTRIBUTION_CONFIG_PATH: manifest, DISTRIBUTION_CONFIG_MODE: 'dark' })]] as const) {
    it(`${label}: validates and logs only`, async () => {
      const gw = await startGateway(env(), t.url);
      try {
        assert.ok(gw.lines.some((l) => /is valid \(dark mode: not applied\)/.test(String(l.msg))));
        const config = await siteConfig(gw);
        assert.equal(config.status, 200);
        assert.equal(config.body.site?.name, 'Inference Gateway');
        assert.equal((await models(gw)).includes('overlay-chat'), false, 'the overlay is not applied');
        const signup = await signUp(gw);
        assert.equal(signup.status, 201);
        const stats = await fetch(`${gw.url}/public-stats`);
        assert.equal(stats.status, 404);
        assert.match(((await stats.json()) as { error: { message: string } }).error.message, /not published/, 'a dark manifest\'s public_stats is not applied');
      } finally {
        await gw.stop();
      }
    });
  }

  it('active: applies the manifest and its overlay; public_signup: false closes sign-up against SIGNUP_ENABLED=true', async () => {
    const gw = await startGateway({ DISTRIBUTION_CONFIG_PATH: manifest, DISTRIBUTION_CONFIG_MODE: 'active', SIGNUP_ENABLED: 'true' }, t.url);
    try {
      const config = await siteConfig(gw);
      assert.equal(config.status, 200);
      assert.equal(config.body.site?.name, 'Acme AI');
      assert.equal(config.body.features?.public_signup, false);
      assert.deepEqual(await models(gw), ['overlay-chat']);
      const stats = await fetch(`${gw.url}/public-stats`);
      assert.equal(stats.status, 404);
      assert.match(((await stats.json()) as { error: { message: string } }).error.message, /No public stats snapshot yet/, 'published, but the job has not run');
      const signup = await signUp(gw);
      assert.equal(signup.status, 403);
      assert.match(signup.message!, /distribution disables public sign-up/);
      assert.equal(await accountExists(signup.email), false);
    } finally {
      await gw.stop();
    }
  });

  const broken: Array<[string, () => Record<string, string>]> = [
    ['a mode other than dark/active (Active)', () => ({ DISTRIBUTION_CONFIG_PATH: manifest, DISTRIBUTION_CONFIG_MODE: 'Active' })],
    ['an empty mode', () => ({ DISTRIBUTION_CONFIG_PATH: manifest, DISTRIBUTION_CONFIG_MODE: '' })],
    ['active without a path', () => ({ DISTRIBUTION_CONFIG_MODE: 'active' })],
  ];
  for (const [label, env] of broken) {
    it(`${label}: sign-up 403 without an account, /site-config 503, one warning at startup`, async () => {
      const gw = await startGateway(env(), t.url);
      try {
        const signup = await signUp(gw);
        assert.equal(signup.status, 403);
        assert.equal(await accountExists(signup.email), false);
        const config = await siteConfig(gw);
        assert.equal(config.status, 503);
        assert.ok(config.body.error?.message);
        const reopen = await fetch(`${gw.url}/admin/settings`, { method: 'PATCH', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ signup_enabled: true }) });
        assert.equal(reopen.status, 400, 'the admin switch cannot reopen it');
        assert.equal(await t.db('site_settings').where({ key: 'signup_enabled' }).first(), undefined, 'nothing stored');
        const warnings = gw.lines.filter((l) => l.event === 'distribution_misconfigured');
        assert.equal(warnings.length, 1);
        assert.equal(warnings[0]!.level, 'warn');
      } finally {
        await gw.stop();
      }
    });
  }

  it('active with a manifest that fails to load: CRITICAL, no models, /site-config 503, sign-up 403', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'bad-manifest-')), 'manifest.yaml');
    writeFileSync(bad, 'schema_version: 2\n');
    const gw = await startGateway({ DISTRIBUTION_CONFIG_PATH: bad, DISTRIBUTION_CONFIG_MODE: 'active' }, t.url);
    try {
      const critical = gw.lines.find((l) => l.event === 'distribution_manifest_failed');
      assert.ok(critical, 'logged');
      assert.equal(critical.level, 'fatal', 'CRITICAL is the fatal level');
      assert.match(String(critical.msg), /^CRITICAL: .*schema_version/);
      assert.deepEqual(await models(gw), []);
      assert.equal((await siteConfig(gw)).status, 503);
      assert.equal((await signUp(gw)).status, 403);
    } finally {
      await gw.stop();
    }
  });
});
