/**
 * The create options of a group's container (activities/docker/sandbox-container.ts): a new
 * sandbox gets exactly the memory and CPU caps of the turn that creates it (the host settings,
 * docs/agent-admin.md "Host settings"), and a CPU cap above the host's CPU count becomes that count.
 */
import assert from 'node:assert/strict';
import { fitLimitsToHost, sandboxContainerOptions, SANDBOX_LABELS, type SandboxSpec } from '../../../../activities/docker/sandbox-container';
import { turnLimitsFrom } from '../../../../agent/settings/host-settings';
import { DEFAULT_SANDBOX_OPEN_FILES, DEFAULT_SANDBOX_PIDS } from '../../../../activities/docker/containment';

const spec = (limits: SandboxSpec['limits'], runtime = { name: 'runc', isolating: false }): SandboxSpec => ({
  jobId: 'job_1', groupId: 'grp_1', generation: 3, attemptId: 'att_1', hostId: 'host-1', uid: 10001, image: 'agent-sandbox:base', diskRoot: '/var/lib/agent/sandbox-disks', limits, runtime,
});

describe('sandbox container options', () => {
  it('caps memory and CPUs with the limits of the turn that creates the container', () => {
    const limits = turnLimitsFrom({
      turn_time_limit_seconds: 60, container_memory_mib: 768, container_cpus: 1.25, container_pids: 200, container_open_files: 4096, container_disk_gib: 5,
      repository_max_mib: 1, command_timeout_seconds: 1, command_output_max_kib: 1, file_read_max_kib: 1,
    });
    const options = sandboxContainerOptions('sbx-grp_1', spec({ memoryBytes: limits.memoryBytes, nanoCpus: limits.nanoCpus, pids: limits.pids, openFiles: limits.openFiles }));
    assert.equal(options.HostConfig?.Memory, 768 * 1024 * 1024);
    assert.equal(options.HostConfig?.MemorySwap, 768 * 1024 * 1024, 'no swap beyond the memory cap');
    assert.equal(options.HostConfig?.Runtime, 'runc', 'the runtime is always named');
    assert.equal(options.HostConfig?.PidsLimit, 200, 'the shared kernel bounds processes with the pids cgroup');
    assert.deepEqual(options.HostConfig?.Ulimits, [{ Name: 'nofile', Soft: 4096, Hard: 4096 }]);
    assert.equal(options.HostConfig?.NanoCpus, 1_250_000_000);
    assert.equal(options.HostConfig?.NetworkMode, 'none');
    assert.equal(options.Labels?.[SANDBOX_LABELS.generation], '3');
    assert.equal(options.name, 'sbx-grp_1');
  });

  it('bounds processes inside the guest kernel under the isolating runtime, with a host backstop above it', () => {
    const options = sandboxContainerOptions('sbx-grp_1', spec({ memoryBytes: 1 << 30, nanoCpus: 1e9, pids: 300, openFiles: 1024 }, { name: 'runsc', isolating: true }));
    assert.equal(options.HostConfig?.Runtime, 'runsc');
    assert.deepEqual(options.HostConfig?.Ulimits, [{ Name: 'nofile', Soft: 1024, Hard: 1024 }, { Name: 'nproc', Soft: 300, Hard: 300 }]);
    assert.ok((options.HostConfig?.PidsLimit ?? 0) > 300 * 4, 'the runtime\'s own host threads fit under the backstop');
  });

  it('applies the default process and open-file caps to limits that name none (work admitted before them)', () => {
    const options = sandboxContainerOptions('sbx-grp_1', spec({ memoryBytes: 1 << 30, nanoCpus: 1e9 }));
    assert.equal(options.HostConfig?.PidsLimit, DEFAULT_SANDBOX_PIDS);
    assert.deepEqual(options.HostConfig?.Ulimits, [{ Name: 'nofile', Soft: DEFAULT_SANDBOX_OPEN_FILES, Hard: DEFAULT_SANDBOX_OPEN_FILES }]);
  });

  it('fits a CPU cap to the host: above its CPU count it becomes the count, below it stays', () => {
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 64e9 }, 2), { memoryBytes: 1, nanoCpus: 2e9 });
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 1.5e9 }, 2), { memoryBytes: 1, nanoCpus: 1.5e9 });
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 2e9 }, 0), { memoryBytes: 1, nanoCpus: 1e9 }, 'an engine reporting no CPUs still allows one');
  });
});
