/**
 * `DockerSandbox` on a real retained container: commands run as the member in /workspace with
 * bounded output, env and stdin; a timeout kills (exit 124) and an abort kills the whole process
 * group; files are read and written as the member; a lost attempt's processes can be fenced.
 */
import assert from 'node:assert/strict';
import { ensureSandboxContainer } from '../../activities/docker/sandbox-container';
import { DockerSandbox, killMemberProcesses } from '../../activities/docker/docker-sandbox';
import { SandboxFileError } from '../../activities/agent/types';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId, testRuntime } from '../support/docker';
import { waitFor } from '../support/wait';

const run = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };

/** Command lines of every process in the container except the listing itself. */
async function processes(sandbox: DockerSandbox): Promise<string[]> {
  const listed = await sandbox.exec(['sh', '-c', 'for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] || tr "\\0" " " < "$p/cmdline" 2>/dev/null; echo; done'], run);
  return listed.stdout.split('\n').map((l) => l.trim()).filter((l) => l && !l.includes('/proc/[0-9]*'));
}

describe('DockerSandbox', () => {
  let sandbox: DockerSandbox;
  let containerName: string;

  before(async () => {
    ({ containerName } = await ensureSandboxContainer(docker(), {
      jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId: `grp-${testRunId}-exec`, generation: 1, attemptId: 'att_1', hostId: 'host-a',
      uid: 1001, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 }, extraLabels: testLabels(),
    }));
    sandbox = new DockerSandbox(docker(), containerName, 1001);
  });

  after(async () => {
    await removeContainers();
  });

  it('runs as the member in /workspace (or cwd) with env, stdin and both streams', async () => {
    const result = await sandbox.exec(['sh', '-c', 'id -u; pwd; echo "$GREETING"; cat; echo oops >&2; exit 3'], { ...run, env: { GREETING: 'hello' }, stdin: 'from stdin\n' });
    assert.deepEqual(result, { exitCode: 3, stdout: '1001\n/workspace\nhello\nfrom stdin\n', stderr: 'oops\n', truncated: false, timedOut: false });
    const elsewhere = await sandbox.exec(['pwd'], { ...run, cwd: '/tmp' });
    assert.equal(elsewhere.stdout, '/tmp\n');
  });

  it('bounds stdout and stderr and streams stdout chunks', async () => {
    const chunks: string[] = [];
    const result = await sandbox.exec(['sh', '-c', 'head -c 5000 /dev/zero | tr "\\0" a; head -c 300 /dev/zero | tr "\\0" b >&2'], { ...run, maxOutputBytes: 100, onStdout: (c) => chunks.push(c) });
    assert.equal(result.exitCode, 0);
    assert.equal(result.stdout, 'a'.repeat(100));
    assert.equal(result.stderr, 'b'.repeat(100));
    assert.equal(result.truncated, true);
    assert.equal(chunks.join(''), 'a'.repeat(5000));
  });

  it('kills a command at its timeout with exit code 124', async () => {
    const result = await sandbox.exec(['sh', '-c', 'echo started; sleep 300 & sleep 301'], { ...run, timeoutMs: 1000 });
    assert.equal(result.exitCode, 124);
    assert.equal(result.timedOut, true);
    assert.equal(result.stdout, 'started\n');
    assert.equal(result.stderr, '');
    await waitFor(async () => !(await processes(sandbox)).some((p) => p.startsWith('sleep 30')), 'the timed-out process group is gone');
  });

  it('kills the whole process group on abort', async () => {
    const controller = new AbortController();
    let seen = '';
    const running = sandbox.exec(['sh', '-c', 'echo ready; sleep 400 & sleep 401; echo never'], {
      ...run, timeoutMs: 120_000, signal: controller.signal, onStdout: (c) => { seen += c; },
    });
    await waitFor(() => seen.includes('ready'), 'the command to start');
    await waitFor(async () => (await processes(sandbox)).some((p) => p === 'sleep 400'), 'the background child to run');
    controller.abort();
    const result = await running;
    assert.notEqual(result.exitCode, 0);
    assert.equal(result.timedOut, false);
    assert.ok(!result.stdout.includes('never'));
    const left = await processes(sandbox);
    assert.ok(!left.some((p) => p.startsWith('sleep 40')), left.join('\n'));
  });

  it('writes and reads files with relative and absolute paths, owned by the member', async () => {
    await sandbox.writeFile('notes/today.txt', 'line one\nline two\n');
    assert.equal(await sandbox.readFile('/workspace/notes/today.txt', 1000), 'line one\nline two\n');
    await sandbox.writeFile('/home/member-1001/.agent/session.json', '{"turn":1}');
    assert.equal(await sandbox.readFile('/home/member-1001/.agent/session.json', 1000), '{"turn":1}');
    const owner = await sandbox.exec(['stat', '-c', '%u:%g', 'notes/today.txt', 'notes'], run);
    assert.equal(owner.stdout, '1001:1001\n1001:1001\n');
  });

  it('throws SandboxFileError for a missing file, a too large file and an unwritable path', async () => {
    await assert.rejects(sandbox.readFile('does/not/exist.txt', 100), SandboxFileError);
    await sandbox.writeFile('big.txt', 'x'.repeat(2000));
    await assert.rejects(sandbox.readFile('big.txt', 1000), (err: Error) => err instanceof SandboxFileError && /2000 bytes/.test(err.message));
    await assert.rejects(sandbox.writeFile('/etc/forbidden.txt', 'no'), SandboxFileError);
  });

  it('killMemberProcesses stops every process of that member and no one else', async () => {
    const other = new DockerSandbox(docker(), containerName, 1002);
    await ensureSandboxContainer(docker(), {
      jobId: 'job_bbbbbbbbbbbbbbbbbbbb', groupId: `grp-${testRunId}-exec`, generation: 1, attemptId: 'att_2', hostId: 'host-a',
      uid: 1002, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 },
    });
    const lost = sandbox.exec(['sleep', '500'], { ...run, timeoutMs: 120_000 });
    const survivor = other.exec(['sleep', '501'], { ...run, timeoutMs: 120_000 });
    await waitFor(async () => {
      const list = await processes(sandbox);
      return list.includes('sleep 500') && list.includes('sleep 501');
    }, 'both members to run');
    await killMemberProcesses(docker(), containerName, 1001);
    assert.notEqual((await lost).exitCode, 0);
    const left = await processes(sandbox);
    assert.ok(left.includes('sleep 501'), 'the other member keeps running');
    await killMemberProcesses(docker(), containerName, 1002);
    await survivor;
  });
});
