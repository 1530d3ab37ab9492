/**
 * The publisher's git work against a real remote repository (a bare repository over `file://`;
 * activities/forge/publish-git.ts, docs/publisher.md "Publish"): the patch gate (the branch's tree
 * must be the patch's start tree; the patch must give exactly its end tree), one commit per turn
 * carrying the turn's trailer, found again by a retried publish (no second commit), later turns
 * stacked on the branch, the job's base used before the branch exists, another's commit never
 * overwritten, and a branch the agent already brought to the turn's end (SCM_TOKEN) left as it is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchGateError, PublishGitError, publishCommit, TURN_TRAILER, type PublishCommitInput } from '../../../../activities/forge/publish-git';

const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' };
const git = (cwd: string, args: string[], input?: Buffer | string): string => execFileSync('git', args, { cwd, env: ENV, input, encoding: 'utf8' }).trim();
const gitRaw = (cwd: string, args: string[]): Buffer => execFileSync('git', args, { cwd, env: ENV });

describe('publisher git work (bare repository over file://)', function () {
  this.timeout(60_000);
  let root: string;
  let origin: string;
  let work: string;
  let url: string;
  let baseSha: string;

  /** The work clone's whole working tree as a tree (as the sandbox capture makes it). */
  const snapshot = (): string => {
    git(work, ['add', '-A']);
    return git(work, ['write-tree']);
  };
  /** A turn in the work clone: the trees around `change` and the binary diff between them. */
  const turn = (change: () => void): { startTree: string; endTree: string; patch: Buffer } => {
    const startTree = snapshot();
    change();
    const endTree = snapshot();
    return { startTree, endTree, patch: gitRaw(work, ['diff', '--binary', startTree, endTree]) };
  };
  const input = (turnId: string, captured: { startTree: string; endTree: string; patch: Buffer }): PublishCommitInput => ({
    url, branch: 'agent/job_test', baseSha, turnId, ...captured, message: `Turn ${turnId}`, author: { name: 'Agent', email: 'agent@example.invalid' },
  });
  const branchLog = (): string[] => git(origin, ['log', '--format=%H', 'agent/job_test']).split('\n');

  before(() => {
    root = mkdtempSync(join(tmpdir(), 'publish-git-'));
    origin = join(root, 'origin.git');
    work = join(root, 'work');
    git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
    git(root, ['clone', '-q', origin, work]);
    writeFileSync(join(work, 'README.md'), 'hello\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'base']);
    git(work, ['push', '-q', 'origin', 'HEAD:main']);
    baseSha = git(work, ['rev-parse', 'HEAD']);
    url = `file://${origin}`;
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('refuses a patch whose start tree is not the branch\'s (here: the base), and pushes nothing', async () => {
    const stray = turn(() => writeFileSync(join(work, 'stray.txt'), 'not from the base\n'));
    const ahead = turn(() => writeFileSync(join(work, 'ahead.txt'), 'x\n'));
    await assert.rejects(publishCommit(input('turn_ahead', ahead)), (err: unknown) => err instanceof PatchGateError && err.reason === 'start_tree_mismatch');
    assert.throws(() => git(origin, ['rev-parse', '--verify', '-q', 'agent/job_test']), 'no branch was made');
    // Back to the base for the next tests.
    rmSync(join(work, 'stray.txt'));
    rmSync(join(work, 'ahead.txt'));
    assert.notEqual(stray.startTree, ahead.startTree);
  });

  it('commits the turn\'s end tree on a new branch from the base, with the turn\'s trailer', async () => {
    const captured = turn(() => {
      writeFileSync(join(work, 'a.txt'), 'made by turn 1\n');
      writeFileSync(join(work, 'blob.bin'), Buffer.from([0, 1, 2, 255, 254]));
    });
    const published = await publishCommit(input('turn_one', captured));
    assert.equal(published.created, true);
    assert.deepEqual(branchLog(), [published.commitSha, baseSha]);
    assert.equal(git(origin, ['rev-parse', `${published.commitSha}^{tree}`]), captured.endTree);
    assert.equal(git(origin, ['log', '-1', `--format=%(trailers:key=${TURN_TRAILER},valueonly)`, published.commitSha]), 'turn_one');
    assert.equal(git(origin, ['show', '-s', '--format=%an <%ae>', published.commitSha]), 'Agent <agent@example.invalid>');
  });

  it('a retried publish of the same turn finds its commit: no second commit, same sha', async () => {
    const tip = branchLog()[0];
    const again = await publishCommit(input('turn_one', { startTree: 'f'.repeat(40), endTree: 'e'.repeat(40), patch: Buffer.from('ignored') }));
    assert.deepEqual(again, { commitSha: tip, created: false });
    assert.equal(branchLog().length, 2);
  });

  it('the next turn stacks on the branch with only its own diff', async () => {
    const captured = turn(() => writeFileSync(join(work, 'b.txt'), 'made by turn 2\n'));
    const published = await publishCommit(input('turn_two', captured));
    const log = branchLog();
    assert.equal(log.length, 3);
    assert.equal(log[0], published.commitSha);
    assert.equal(git(origin, ['diff', '--name-only', `${published.commitSha}^`, published.commitSha]), 'b.txt');
  });

  it('refuses a patch that does not give the end tree it claims, and one that does not apply', async () => {
    const captured = turn(() => writeFileSync(join(work, 'c.txt'), 'turn 3\n'));
    await assert.rejects(publishCommit(input('turn_forged', { ...captured, endTree: captured.startTree.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) })),
      (err: unknown) => err instanceof PatchGateError && err.reason === 'end_tree_mismatch');
    const broken = Buffer.from('diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-no such line\n+x\n');
    await assert.rejects(publishCommit(input('turn_broken', { ...captured, patch: broken })),
      (err: unknown) => err instanceof PatchGateError && err.reason === 'does_not_apply');
    assert.equal(branchLog().length, 3, 'nothing pushed');
  });

  it('a branch someone else moved is never overwritten: the gate refuses the turn', async () => {
    const other = join(root, 'other');
    git(root, ['clone', '-q', '-b', 'agent/job_test', origin, other]);
    writeFileSync(join(other, 'human.txt'), 'a person pushed this\n');
    git(other, ['add', '-A']);
    git(other, ['commit', '-q', '-m', 'by hand']);
    git(other, ['push', '-q', 'origin', 'HEAD:agent/job_test']);
    const human = git(other, ['rev-parse', 'HEAD']);
    const captured = turn(() => writeFileSync(join(work, 'd.txt'), 'turn 4\n'));
    await assert.rejects(publishCommit(input('turn_four', captured)), (err: unknown) => err instanceof PatchGateError && err.reason === 'start_tree_mismatch');
    assert.equal(branchLog()[0], human, 'the person\'s commit stays the tip');
  });

  it('a branch that already holds the turn\'s end tree (pushed by the agent with SCM_TOKEN) is taken as the turn\'s commit', async () => {
    const mirror = join(root, 'agent-side');
    git(root, ['clone', '-q', '-b', 'agent/job_test', origin, mirror]);
    const tip = branchLog()[0]!;
    const startTree = git(mirror, ['rev-parse', 'HEAD^{tree}']);
    writeFileSync(join(mirror, 'pushed-by-agent.txt'), 'with SCM_TOKEN\n');
    git(mirror, ['add', '-A']);
    git(mirror, ['commit', '-q', '-m', 'agent push']);
    git(mirror, ['push', '-q', 'origin', 'HEAD:agent/job_test']);
    const pushed = git(mirror, ['rev-parse', 'HEAD']);
    const endTree = git(mirror, ['rev-parse', 'HEAD^{tree}']);
    const patch = gitRaw(mirror, ['diff', '--binary', startTree, endTree]);
    assert.deepEqual(await publishCommit(input('turn_scm', { startTree, endTree, patch })), { commitSha: pushed, created: false });
    assert.deepEqual(branchLog().slice(0, 2), [pushed, tip], 'no commit added');
  });

  it('a forge that cannot be reached is a git error with no credential in it', async () => {
    const captured = turn(() => writeFileSync(join(work, 'e.txt'), 'x\n'));
    const secret = 'Bearer sekrit-token-0123456789';
    await assert.rejects(publishCommit({ ...input('turn_x', captured), url: 'http://127.0.0.1:9/nowhere.git', authHeader: secret }), (err: unknown) => {
      assert.ok(err instanceof PublishGitError, String(err));
      assert.doesNotMatch(err.message, /sekrit/);
      return true;
    });
  });
});
