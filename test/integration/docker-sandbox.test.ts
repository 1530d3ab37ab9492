/**
 * The Docker engine is real: labelled containers from `agent-sandbox:base`, commands run in
 * them, the per-sandbox caps applied, timeouts kill, and containers are always removed.
 */
import assert from 'node:assert/strict';
import { runSandboxCommand, DEFAULT_SANDBOX_LIMITS } from '../../activities/docker/sandbox-command';
import { docker, execIn, removeContainers, SANDBOX_IMAGE, startTestContainer, testLabels, testRunId, testRuntime, TEST_RUN_LABEL } from '../support/docker';

const MEMTOTAL_BYTES = "awk '/^MemTotal:/ { printf \"%.0f\\n\", $2 * 1024 }' /proc/meminfo";
const CGROUP_LIMIT = 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max';

describe('Docker sandbox containers', () => {
  after(async () => {
    await removeContainers();
  });

  it('runs commands in a labelled long-lived container and keeps files between execs', async () => {
    const container = await startTestContainer({ 'agent.chat': 'chat-1' });
    try {
      const info = await container.inspect();
      assert.equal(info.Config.Labels[TEST_RUN_LABEL], testRunId);
      assert.equal(info.Config.Labels['agent.chat'], 'chat-1');
      assert.equal(info.Config.WorkingDir, '/workspace');
      const write = await execIn(container, ['bash', '-c', 'echo kept > /workspace/note.txt']);
      assert.equal(write.exitCode, 0);
      const read = await execIn(container, ['cat', '/workspace/note.txt']);
      assert.equal(read.output.trim(), 'kept');
      const failing = await execIn(container, ['bash', '-c', 'exit 7']);
      assert.equal(failing.exitCode, 7);
    } finally {
      await container.remove({ force: true });
    }
  });

  it('runSandboxCommand returns stdout, stderr and exit code, applies the caps and removes the container', async () => {
    const name = `test-cmd-${testRunId}`;
    const result = await runSandboxCommand(
      // The memory cap as the sandbox sees it: gVisor's guest kernel reports it as the machine's memory, runc's cgroup file holds it.
      { command: ['bash', '-c', `echo out; echo err >&2; ${testRuntime().isolating ? MEMTOTAL_BYTES : CGROUP_LIMIT}; exit 3`], labels: testLabels(), timeoutMs: 30_000 },
      { docker: docker(), image: SANDBOX_IMAGE, name, runtime: testRuntime() },
    );
    assert.equal(result.exitCode, 3);
    const [out, limit] = result.stdout.trim().split('\n');
    assert.equal(out, 'out');
    assert.equal(Number(limit), DEFAULT_SANDBOX_LIMITS.memoryBytes);
    assert.equal(result.stderr.trim(), 'err');
    await assert.rejects(docker().getContainer(name).inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
  });

  it('kills a command that outlives its timeout (exit 124) and still removes the container', async () => {
    const name = `test-timeout-${testRunId}`;
    const result = await runSandboxCommand(
      { command: ['sleep', '60'], labels: testLabels(), timeoutMs: 1000 },
      { docker: docker(), image: SANDBOX_IMAGE, name, runtime: testRuntime() },
    );
    assert.equal(result.exitCode, 124);
    await assert.rejects(docker().getContainer(name).inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
  });

  it('removeContainers removes every container of this run', async () => {
    await startTestContainer();
    await startTestContainer();
    assert.equal(await removeContainers(), 2);
    const left = await docker().listContainers({ all: true, filters: { label: [`${TEST_RUN_LABEL}=${testRunId}`] } });
    assert.equal(left.length, 0);
  });
});
