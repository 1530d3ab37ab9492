/**
 * The tests' Gitea (test/support/gitea.ts) is a real forge: a private repository is refused to an
 * anonymous clone and to a stranger's token, and cloned with a collaborator's read token sent as
 * git's `http.extraHeader`; its initial commit is on `main`.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { addGiteaCollaborator, basicAuth, createGiteaRepo, createGiteaToken, createGiteaUser, testGitea } from '../../support/gitea';

const execFileAsync = promisify(execFile);

/** `git clone` with no credential helper, no prompt and at most the given header. */
async function clone(url: string, dir: string, header?: string): Promise<{ ok: boolean; stderr: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' };
  if (header) Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: ${header}` });
  try {
    await execFileAsync('git', ['clone', '-q', url, join(dir, 'checkout')], { env });
    return { ok: true, stderr: '' };
  } catch (err) {
    return { ok: false, stderr: String((err as { stderr?: string }).stderr) };
  }
}

describe('the test forge (Gitea on loopback)', function () {
  this.timeout(120_000);
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gitea-clone-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a private repository to anonymous and stranger clones and serves it to a collaborator read token', async () => {
    const gitea = await testGitea();
    const owner = await createGiteaUser();
    const reader = await createGiteaUser();
    const stranger = await createGiteaUser();
    const repo = await createGiteaRepo(owner.username, undefined, { private: true });
    assert.ok(repo.cloneUrl.startsWith(`${gitea.url}/`), repo.cloneUrl);
    await addGiteaCollaborator(owner.username, repo.name, reader.username, 'read');

    const anonymous = await clone(repo.cloneUrl, dir);
    assert.equal(anonymous.ok, false, 'an anonymous clone of a private repository must fail');
    const strangerToken = await createGiteaToken(stranger, ['read:repository']);
    assert.equal((await clone(repo.cloneUrl, dir, basicAuth('x-access-token', strangerToken))).ok, false, 'a non-collaborator token must not clone');

    const token = await createGiteaToken(reader, ['read:repository']);
    const cloned = await clone(repo.cloneUrl, dir, basicAuth('x-access-token', token));
    assert.equal(cloned.ok, true, cloned.stderr);
    const head = await readFile(join(dir, 'checkout', '.git', 'HEAD'), 'utf8');
    assert.equal(head.trim(), 'ref: refs/heads/main');
    assert.match(await readFile(join(dir, 'checkout', 'README.md'), 'utf8'), new RegExp(repo.name));
  });
});
