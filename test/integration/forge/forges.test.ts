/**
 * The deployment's forges from its settings (activities/forge/forges.ts), as the API composes them:
 * the GitHub adapter with the source-control app (against the loopback wire server) and the Gitea
 * adapter (against the real Gitea) side by side; each job repository goes to the forge that serves
 * it, none to a repository no forge serves; a configured app that cannot be loaded answers 503 for
 * its repositories only; repo tokens exist only when asked for.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgesFromSettings, repoCredentialsOf } from '../../../activities/forge/forges';
import { SourceControlApp } from '../../../agent/jobs/source-control-app';
import { AppError } from '../../../lib/errors';
import { loadSettings } from '../../../lib/settings';
import { createGiteaRepo, createGiteaUser, testGitea } from '../../support/gitea';
import { gitWithHeader } from '../../support/git-http';
import { startLoopbackGithub, type LoopbackGithub } from '../../support/loopback-github';
import { captureLogs } from '../../support/logs';

describe('forges from the settings (GitHub app on the wire + Gitea)', function () {
  this.timeout(120_000);
  let wire: LoopbackGithub;
  let dir: string;
  let keyPath: string;
  let giteaRepo: string;
  let env: Record<string, string>;

  before(async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    wire = await startLoopbackGithub({
      app: { appId: '99', publicKey },
      repos: [{ owner: 'octo', name: 'widgets', defaultBranch: 'main', installationId: 5, permissions: { contents: 'write', pull_requests: 'write' } }],
    });
    dir = await mkdtemp(join(tmpdir(), 'forges-'));
    keyPath = join(dir, 'app.pem');
    await writeFile(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const gitea = await testGitea();
    const owner = await createGiteaUser();
    const repo = await createGiteaRepo(owner.username, undefined, { private: true });
    giteaRepo = `${gitea.url}/${repo.owner}/${repo.name}`;
    env = {
      AGENT_SOURCE_CONTROL_APP_ID: '99', AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: keyPath, AGENT_GITHUB_API_URL: wire.url, AGENT_GITHUB_WEB_URL: wire.url,
      AGENT_GITEA_URL: gitea.url, AGENT_GITEA_ADMIN_USERNAME: gitea.admin.username, AGENT_GITEA_ADMIN_PASSWORD: gitea.admin.password,
    };
  });
  after(async () => {
    await wire?.close();
    await rm(dir, { recursive: true, force: true });
  });

  function compose(overrides: Record<string, string> = {}, repoTokens = true) {
    const settings = loadSettings({ ...env, ...overrides });
    const app = new SourceControlApp(settings, captureLogs('forges').log);
    const forges = forgesFromSettings(settings, () => app.current());
    return { forges, credentials: repoCredentialsOf(forges, { repoTokens }) };
  }

  it('sends each job repository to the forge that serves it, and none elsewhere', async () => {
    const { forges, credentials } = compose();
    assert.deepEqual(forges.map((f) => f.kind), ['github', 'gitea']);
    const github = await credentials.cloneToken(`${wire.url}/octo/widgets`);
    assert.deepEqual(wire.tokens.find((t) => t.token === github?.token)?.permissions, { contents: 'read' });
    const gitea = await credentials.cloneToken(giteaRepo);
    assert.ok(gitea);
    await gitWithHeader(dir, ['ls-remote', `${giteaRepo}.git`], `Basic ${Buffer.from(`x-access-token:${gitea.token}`).toString('base64')}`);
    assert.equal(await credentials.cloneToken('https://elsewhere.example/octo/widgets'), undefined);
    const repoToken = await credentials.repoToken?.(`${wire.url}/octo/widgets`);
    assert.deepEqual(wire.tokens.find((t) => t.token === repoToken?.token)?.permissions, { contents: 'write', pull_requests: 'write' });
  });

  it('answers 503 for the app\'s repositories while the configured app cannot be loaded, and still serves Gitea', async () => {
    const { credentials } = compose({ AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: join(dir, 'missing.pem') });
    const calls = wire.requests.length;
    await assert.rejects(credentials.cloneToken(`${wire.url}/octo/widgets`), (err: unknown) => err instanceof AppError && err.status === 503 && err.expose);
    assert.equal(wire.requests.length, calls);
    assert.ok(await credentials.cloneToken(giteaRepo));
  });

  it('answers 502 when the forge refuses, with no credential in the message', async () => {
    const { credentials } = compose();
    const err = await credentials.cloneToken(`${wire.url}/octo/not-installed`).catch((e: unknown) => e);
    assert.ok(err instanceof AppError && err.status === 502, String(err));
    assert.ok(!/ey[A-Za-z0-9_-]{20}/.test(err.message), err.message);
  });

  it('issues no repo token without the source-control app', () => {
    const { credentials } = compose({}, false);
    assert.equal(credentials.repoToken, undefined);
    const { forges } = compose({ AGENT_SOURCE_CONTROL_APP_ID: '', AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: '' });
    assert.deepEqual(forges.map((f) => f.kind), ['gitea']);
  });
});
