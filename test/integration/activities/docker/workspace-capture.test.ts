/**
 * The turn capture on a real sandbox (activities/docker/workspace-capture.ts; docs/publisher.md
 * "Capture"): the patch is exactly what the turn changed in `/workspace` (new, changed, committed
 * and binary files; not ignored files, not what an earlier turn made), the agent's own index and
 * HEAD are left alone, a patch above the bound is reported as too large without being read, and
 * the patch turns the start tree into the end tree exactly.
 */
import assert from 'node:assert/strict';
import { captureTurnDiff, snapshotWorkspace } from '../../../../activities/docker/workspace-capture';
import { initWorkspace } from '../../../../activities/docker/workspace-init';
import { docker } from '../../../support/docker';
import { startMemberSandbox, TEST_MEMBER_UID, type MemberSandbox } from '../../../support/member-sandbox';

const run = { timeoutMs: 60_000, maxOutputBytes: 256 * 1024 };

describe('workspace capture (real sandbox)', function () {
  this.timeout(180_000);
  let member: MemberSandbox;
  let target: { docker: ReturnType<typeof docker>; containerName: string; uid: number };

  async function sh(script: string): Promise<string> {
    const result = await member.sandbox.exec(['sh', '-c', script], run);
    assert.equal(result.exitCode, 0, `${script}: ${result.stderr}`);
    return result.stdout;
  }

  async function startTree(): Promise<string> {
    const start = await snapshotWorkspace(target, { fresh: true });
    assert.ok('tree' in start, 'start snapshot');
    return start.tree;
  }

  before(async () => {
    member = await startMemberSandbox({ suite: 'workspace-capture' });
    target = { docker: docker(), containerName: member.sandbox.containerName, uid: TEST_MEMBER_UID };
    await initWorkspace(docker(), member.sandbox.containerName, { uid: TEST_MEMBER_UID, repo: null });
    await sh('git config user.email agent@example.invalid && git config user.name Agent');
  });

  after(async () => {
    await member?.remove();
  });

  it("captures exactly the turn's changes: new, committed and binary files, not ignored ones", async () => {
    const start = await startTree();
    await sh([
      'printf "hello\\n" > a.txt',
      'printf "*.log\\n" > .gitignore',
      'printf "noise\\n" > debug.log',
      'printf "\\000\\001\\377binary" > bin.dat',
      'printf "committed\\n" > c.txt && git add c.txt && git commit -q -m "agent commit"',
      'printf "staged\\n" > s.txt && git add s.txt',
    ].join(' && '));
    const indexBefore = await sh('git diff --cached --name-only; git rev-parse HEAD');
    const capture = await captureTurnDiff(target, { startTree: start, maxBytes: 1024 * 1024 });
    assert.equal(capture.status, 'captured');
    if (capture.status !== 'captured') return;
    const patch = capture.patch.toString('latin1');
    const files = [...patch.matchAll(/^diff --git a\/(\S+) b\//gm)].map((m) => m[1]).sort();
    assert.deepEqual(files, ['.gitignore', 'a.txt', 'bin.dat', 'c.txt', 's.txt']);
    assert.match(patch, /GIT binary patch/);
    assert.doesNotMatch(patch, /debug\.log|noise/);
    assert.equal(await sh('git diff --cached --name-only; git rev-parse HEAD'), indexBefore, "the agent's index and HEAD are unchanged");
    assert.equal(await sh('git status --porcelain --ignored=no | sort'), '?? .gitignore\n?? a.txt\n?? bin.dat\nA  s.txt\n');

    // The patch applied to the start tree gives the end tree exactly (what the publisher's gate checks).
    const applied = await member.sandbox.exec(['sh', '-c', [
      'export GIT_INDEX_FILE=/tmp/check-index',
      'git read-tree "$0"', 'git apply --cached --binary', 'git write-tree', 'rm -f /tmp/check-index',
    ].join(' && '), start], { ...run, stdin: capture.patch.toString('latin1') });
    assert.equal(applied.stdout.trim(), capture.endTree, applied.stderr);
  });

  it("leaves out what an earlier turn made: the next turn's patch holds only its own change", async () => {
    const start = await startTree();
    await sh('printf "hello\\nagain\\n" > a.txt && printf "new\\n" > d.txt && printf "more\\n" >> debug.log');
    const capture = await captureTurnDiff(target, { startTree: start, maxBytes: 1024 * 1024 });
    assert.equal(capture.status, 'captured');
    if (capture.status !== 'captured') return;
    const patch = capture.patch.toString('utf8');
    const files = [...patch.matchAll(/^diff --git a\/(\S+) b\//gm)].map((m) => m[1]).sort();
    assert.deepEqual(files, ['a.txt', 'd.txt']);
    assert.match(patch, /^\+again$/m);
    assert.doesNotMatch(patch, /^\+hello$/m, 'the earlier turn\'s line is context, not added');
  });

  it('a turn that changed nothing captures an empty patch with equal trees', async () => {
    const start = await startTree();
    const capture = await captureTurnDiff(target, { startTree: start, maxBytes: 1024 });
    assert.deepEqual(capture, { status: 'captured', startTree: start, endTree: start, patch: Buffer.alloc(0) });
  });

  it('a patch above the bound is too large and is not read', async () => {
    const start = await startTree();
    await sh('head -c 200000 /dev/urandom | base64 > big.txt');
    const capture = await captureTurnDiff(target, { startTree: start, maxBytes: 4096 });
    assert.equal(capture.status, 'too_large');
    if (capture.status === 'too_large') assert.ok(capture.bytes > 200_000, String(capture.bytes));
  });

  it('a forged start tree is refused before anything runs', async () => {
    const capture = await captureTurnDiff(target, { startTree: 'HEAD; rm -rf /', maxBytes: 1024 });
    assert.deepEqual(capture, { status: 'failed', reason: 'The start tree is not an object id' });
  });
});
