/**
 * Initializing a sandbox's `/workspace` on the real Docker engine: the temporary workspace's
 * empty commit is identical everywhere, and a repository is cloned on the host side with a clone
 * credential that never lands in the checkout.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSandboxContainer, type SandboxSpec } from '../../activities/docker/sandbox-container';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { initWorkspace, TEMPORARY_WORKSPACE_SHA } from '../../activities/docker/workspace-init';
import { UnsupportedRepoError, BaseRevisionNotFoundError } from '../../activities/docker/workspace-clone';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId, testRuntime } from '../support/docker';

const run = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };
const FAKE_CREDENTIAL = 'ghs_fakeCloneCredential0123456789';

function spec(groupId: string): SandboxSpec {
  return {
    jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId, generation: 1, attemptId: 'att_1', hostId: 'host-a', uid: 1001,
    image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 }, extraLabels: testLabels(),
  };
}

async function sandboxFor(groupId: string): Promise<{ name: string; sandbox: DockerSandbox }> {
  const { containerName } = await ensureSandboxContainer(docker(), spec(groupId));
  return { name: containerName, sandbox: new DockerSandbox(docker(), containerName, 1001) };
}

function git(cwd: string, ...args: string[]): string {
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: cwd, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
  return execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
}

describe('workspace initialization', () => {
  let scratch: string;
  let bare: string;
  let firstSha: string;
  let secondSha: string;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'ws-test-'));
    const work = join(scratch, 'work');
    bare = join(scratch, 'origin.git');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['init', '-q', '-b', 'main', work]);
    writeFileSync(join(work, 'README.md'), 'version one\n');
    git(work, 'add', '.');
    git(work, 'commit', '-q', '-m', 'one');
    firstSha = git(work, 'rev-parse', 'HEAD');
    writeFileSync(join(work, 'README.md'), 'version two\n');
    writeFileSync(join(work, 'added.txt'), 'new file\n');
    git(work, 'add', '.');
    git(work, 'commit', '-q', '-m', 'two');
    secondSha = git(work, 'rev-parse', 'HEAD');
    git(work, 'checkout', '-q', '-b', 'feature', firstSha);
    writeFileSync(join(work, 'feature.txt'), 'on feature\n');
    git(work, 'add', '.');
    git(work, 'commit', '-q', '-m', 'feature');
    git(work, 'push', '-q', bare, 'main', 'feature');
  });

  after(async () => {
    await removeContainers();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('makes a temporary workspace with the same empty commit on main in every container', async () => {
    const shas: string[] = [];
    for (const suffix of ['t1', 't2']) {
      const { name, sandbox } = await sandboxFor(`grp-${testRunId}-${suffix}`);
      const { baseSha } = await initWorkspace(docker(), name, { uid: 1001, repo: null });
      shas.push(baseSha);
      const log = await sandbox.exec(['git', 'log', '--format=%H|%an|%ae|%aI|%cn|%ce|%cI|%s'], run);
      assert.equal(log.exitCode, 0, log.stderr);
      assert.deepEqual(log.stdout.trim().split('\n'), [
        `${TEMPORARY_WORKSPACE_SHA}|Agent Workspace|workspace@agent.invalid|2000-01-01T00:00:00+00:00|Agent Workspace|workspace@agent.invalid|2000-01-01T00:00:00+00:00|Temporary workspace`,
      ]);
      const branch = await sandbox.exec(['git', 'branch', '--show-current'], run);
      assert.equal(branch.stdout.trim(), 'main');
      const tree = await sandbox.exec(['git', 'ls-tree', '-r', 'HEAD'], run);
      assert.equal(tree.stdout, '');
    }
    assert.deepEqual(shas, [TEMPORARY_WORKSPACE_SHA, TEMPORARY_WORKSPACE_SHA]);
  });

  it('is idempotent: an initialized workspace keeps its files and returns its recorded base', async () => {
    const { name, sandbox } = await sandboxFor(`grp-${testRunId}-t1`);
    await sandbox.writeFile('work-in-progress.txt', 'keep me');
    const again = await initWorkspace(docker(), name, { uid: 1001, repo: `file://${bare}` });
    assert.equal(again.baseSha, TEMPORARY_WORKSPACE_SHA);
    assert.equal(await sandbox.readFile('work-in-progress.txt', 100), 'keep me');
  });

  it('clones a repository at the requested sha with a credential that is not kept in the checkout', async () => {
    const { name, sandbox } = await sandboxFor(`grp-${testRunId}-c1`);
    const { baseSha } = await initWorkspace(docker(), name, { uid: 1001, repo: `file://${bare}`, baseSha: firstSha, cloneCredential: FAKE_CREDENTIAL });
    assert.equal(baseSha, firstSha);
    assert.equal(await sandbox.readFile('README.md', 100), 'version one\n');
    await assert.rejects(sandbox.readFile('added.txt', 100));
    const head = await sandbox.exec(['git', 'rev-parse', 'HEAD'], run);
    assert.equal(head.stdout.trim(), firstSha);
    const config = await sandbox.readFile('.git/config', 64 * 1024);
    assert.ok(!config.includes(FAKE_CREDENTIAL) && !config.includes(Buffer.from(`x-access-token:${FAKE_CREDENTIAL}`).toString('base64')));
    assert.ok(!/extraheader/i.test(config), config);
    const grep = await sandbox.exec(['sh', '-c', `grep -rl ${FAKE_CREDENTIAL} /workspace /etc/agent || true`], run);
    assert.equal(grep.stdout.trim(), '');
    const owners = await sandbox.exec(['sh', '-c', 'find /workspace ! -uid 1001 | head -5'], run);
    assert.equal(owners.stdout.trim(), '', 'every file belongs to the member');
    const status = await sandbox.exec(['git', 'status', '--porcelain'], run);
    assert.equal(status.stdout, '');
  });

  it('clones the tip of a base ref, and the default branch when no base is given', async () => {
    const feature = await sandboxFor(`grp-${testRunId}-c2`);
    const onFeature = await initWorkspace(docker(), feature.name, { uid: 1001, repo: `file://${bare}`, baseRef: 'feature' });
    assert.equal(await feature.sandbox.readFile('feature.txt', 100), 'on feature\n');
    assert.equal((await feature.sandbox.exec(['git', 'branch', '--show-current'], run)).stdout.trim(), 'feature');
    assert.notEqual(onFeature.baseSha, secondSha);
    const main = await sandboxFor(`grp-${testRunId}-c3`);
    const onMain = await initWorkspace(docker(), main.name, { uid: 1001, repo: `file://${bare}` });
    assert.equal(onMain.baseSha, secondSha);
    assert.equal(await main.sandbox.readFile('added.txt', 100), 'new file\n');
  });

  it('refuses other repository strings and reports a missing base sha', async () => {
    const { name } = await sandboxFor(`grp-${testRunId}-c4`);
    for (const repo of ['git@example.com:o/r.git', 'ssh://example.com/o/r', 'owner/name', 'https://user:pw@example.com/o/r']) {
      await assert.rejects(initWorkspace(docker(), name, { uid: 1001, repo }), UnsupportedRepoError, repo);
    }
    await assert.rejects(
      initWorkspace(docker(), name, { uid: 1001, repo: `file://${bare}`, baseSha: 'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef', cloneCredential: FAKE_CREDENTIAL }),
      (err: Error) => err instanceof BaseRevisionNotFoundError && !err.message.includes(FAKE_CREDENTIAL),
    );
  });
});
