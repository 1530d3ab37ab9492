/**
 * One git repository shared by the members of a sandbox group (docs/sandboxes.md "Forks"): the
 * original member commits, a fork member commits on top, the original commits again, and each
 * member's turn capture works; what git wrote stays writable by the group. Both ways a workspace
 * starts: a temporary one (`git init`) and a clone of a repository (a bare repository on the host,
 * cloned on the host side and copied in, as for a chat on a repository).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerSandbox } from '../../../../activities/docker/docker-sandbox';
import { ensureMember } from '../../../../activities/docker/sandbox-container';
import { captureTurnDiff, snapshotWorkspace } from '../../../../activities/docker/workspace-capture';
import { initWorkspace } from '../../../../activities/docker/workspace-init';
import { docker } from '../../../support/docker';
import { startMemberSandbox, TEST_MEMBER_UID, type MemberSandbox } from '../../../support/member-sandbox';

const run = { timeoutMs: 60_000, maxOutputBytes: 256 * 1024 };
const FORK_UID = TEST_MEMBER_UID + 1;

describe('git shared by the members of a sandbox group (real sandbox)', function () {
  this.timeout(180_000);
  let member: MemberSandbox;
  let fork: DockerSandbox;

  async function sh(as: DockerSandbox, script: string): Promise<string> {
    const result = await as.exec(['sh', '-c', script], run);
    assert.equal(result.exitCode, 0, `${script} (uid ${as.uid}): ${result.stderr}`);
    return result.stdout;
  }

  async function commit(as: DockerSandbox, file: string): Promise<string> {
    return (await sh(as, `mkdir -p "$(dirname ${file})" && printf '%s\\n' "${file}" >> ${file} && git -c user.email=m@example.invalid -c user.name=M${as.uid} add ${file} && git -c user.email=m@example.invalid -c user.name=M${as.uid} commit -q -m ${file} && git rev-parse HEAD`)).trim();
  }

  async function captureAs(uid: number, change: () => Promise<unknown>): Promise<string> {
    const target = { docker: docker(), containerName: member.sandbox.containerName, uid };
    const start = await snapshotWorkspace(target, { fresh: true });
    assert.ok('tree' in start, `start snapshot as ${uid}: ${JSON.stringify(start)}`);
    await change();
    const capture = await captureTurnDiff(target, { startTree: start.tree, maxBytes: 1024 * 1024 });
    assert.equal(capture.status, 'captured', `capture as ${uid}: ${JSON.stringify(capture)}`);
    return capture.status === 'captured' ? capture.patch.toString('utf8') : '';
  }

  before(async () => {
    member = await startMemberSandbox({ suite: 'workspace-shared-git' });
    await initWorkspace(docker(), member.sandbox.containerName, { uid: TEST_MEMBER_UID, repo: null });
    fork = new DockerSandbox(docker(), member.sandbox.containerName, FORK_UID);
  });

  after(async () => {
    await member?.remove();
  });

  it('lets the original, then a fork, then the original again commit on one branch, each capture its turn', async () => {
    const first = await commit(member.sandbox, 'a.txt');
    await ensureMember(docker(), member.sandbox.containerName, FORK_UID);
    let second = '';
    const forkPatch = await captureAs(FORK_UID, async () => {
      second = await commit(fork, 'b.txt');
    });
    assert.match(forkPatch, /^\+\+\+ b\/b\.txt$/m);
    const originalPatch = await captureAs(TEST_MEMBER_UID, () => commit(member.sandbox, 'c.txt'));
    assert.match(originalPatch, /^\+\+\+ b\/c\.txt$/m);
    const third = (await sh(member.sandbox, 'git rev-parse HEAD')).trim();
    assert.equal((await sh(fork, 'git rev-list --parents -n 1 HEAD')).trim(), `${third} ${second}`);
    assert.equal((await sh(fork, `git rev-list --parents -n 1 ${second}`)).trim(), `${second} ${first}`);
    assert.equal((await sh(fork, 'git log --format=%an --reverse | tail -n 3')).trim().split('\n').join(' '), `M${TEST_MEMBER_UID} M${FORK_UID} M${TEST_MEMBER_UID}`);
  });

  it('keeps the repository group-writable: shared by configuration, no object or ref closed to the group', async () => {
    // `git init --shared=group` records it as `1`, the same setting.
    assert.match((await sh(fork, 'git config core.sharedRepository')).trim(), /^(group|1)$/);
    // Loose objects are read-only by design (never changed, only added); every directory, ref and other file is group-writable.
    const closed = await sh(fork, "find .git ! -perm -g+w ! -regex '.git/objects/[0-9a-f][0-9a-f]/[0-9a-f]*' -print | head");
    assert.equal(closed, '', 'everything under .git but the loose objects is group-writable');
    const modes = await sh(fork, 'stat -c "%A %G" .git/objects/$(git rev-parse HEAD | cut -c1-2) .git/refs/heads/main');
    for (const line of modes.trim().split('\n')) assert.match(line, /^.{4}rw[xs-].* agent-workspace$/, line);
  });

  it('makes a repository from before forks shared when the first fork joins', async () => {
    const older = await startMemberSandbox({ suite: 'workspace-shared-git-older' });
    try {
      const original = older.sandbox;
      await initWorkspace(docker(), original.containerName, { uid: TEST_MEMBER_UID, repo: null });
      await sh(original, 'git config --unset core.sharedRepository && chmod -R go-w .git');
      await commit(original, 'old.txt');
      await ensureMember(docker(), original.containerName, FORK_UID);
      const joined = new DockerSandbox(docker(), original.containerName, FORK_UID);
      assert.equal((await sh(joined, 'git config core.sharedRepository')).trim(), 'group');
      assert.equal((await sh(joined, 'stat -c %U .git/config')).trim(), `member-${TEST_MEMBER_UID}`, 'the configuration stays the owner\'s');
      await commit(joined, 'new.txt');
      await commit(original, 'newer.txt');
      assert.equal((await sh(joined, 'git log --format=%s | head -n 3')).trim().split('\n').join(' '), 'newer.txt new.txt old.txt');
    } finally {
      await older.remove();
    }
  });

  it('lets the original, a fork, then the original again commit on a cloned repository', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'shared-git-clone-'));
    const cloned = await startMemberSandbox({ suite: 'workspace-shared-git-clone' });
    try {
      const bare = bareRepository(scratch);
      const original = cloned.sandbox;
      await initWorkspace(docker(), original.containerName, { uid: TEST_MEMBER_UID, repo: `file://${bare}` });
      // Shared from the clone on, not only once a fork joins (the join would set it too).
      assert.match((await sh(original, 'git config core.sharedRepository')).trim(), /^(group|1)$/);
      const first = await commit(original, 'src/a.txt');
      await ensureMember(docker(), original.containerName, FORK_UID);
      const joined = new DockerSandbox(docker(), original.containerName, FORK_UID);
      // The fork changes a file that came with the clone, in a directory that came with it, and adds one.
      const second = await commit(joined, 'src/lib/cloned.txt');
      await commit(joined, 'README.md');
      const third = await commit(original, 'src/lib/cloned.txt');
      assert.equal((await sh(joined, 'git log --format=%an | head -n 4')).trim().split('\n').join(' '), `M${TEST_MEMBER_UID} M${FORK_UID} M${FORK_UID} M${TEST_MEMBER_UID}`);
      assert.equal((await sh(joined, `git rev-list --parents -n 1 ${second}`)).trim(), `${second} ${first}`);
      assert.equal((await sh(joined, 'git rev-parse HEAD')).trim(), third);
      assert.equal((await sh(joined, 'git status --porcelain')).trim(), '', 'both see one clean tree');
      assert.equal((await sh(original, 'git log --format=%s origin/main | tail -n 1')).trim(), 'upstream', 'the clone\'s history is below');
      assert.match((await sh(joined, 'git config core.sharedRepository')).trim(), /^(group|1)$/);
      const closed = await sh(joined, "find .git ! -perm -g+w ! -regex '.git/objects/[0-9a-f][0-9a-f]/[0-9a-f]*' ! -regex '.git/objects/pack/.*' -print | head");
      assert.equal(closed, '', 'everything under .git but the objects (never changed) is group-writable');
    } finally {
      await cloned.remove();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

/** A bare repository on the host with one commit holding a file in a nested directory and a README. */
function bareRepository(scratch: string): string {
  const work = join(scratch, 'work');
  const bare = join(scratch, 'origin.git');
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: scratch, GIT_AUTHOR_NAME: 'u', GIT_AUTHOR_EMAIL: 'u@example.invalid', GIT_COMMITTER_NAME: 'u', GIT_COMMITTER_EMAIL: 'u@example.invalid' };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' });
  git(scratch, 'init', '-q', '--bare', '-b', 'main', bare);
  git(scratch, 'init', '-q', '-b', 'main', work);
  mkdirSync(join(work, 'src', 'lib'), { recursive: true });
  writeFileSync(join(work, 'src', 'lib', 'cloned.txt'), 'from upstream\n');
  writeFileSync(join(work, 'README.md'), 'upstream\n');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'upstream');
  git(work, 'push', '-q', bare, 'main');
  return bare;
}
