/**
 * The create options of a group's container (activities/docker/sandbox-container.ts): a new
 * sandbox gets exactly the memory and CPU caps of the turn that creates it (the host settings,
 * docs/agent-admin.md "Host settings"), and a CPU cap above the host's CPU count becomes that count.
 */
import assert from 'node:assert/strict';
import { fitLimitsToHost, sandboxContainerOptions, SANDBOX_LABELS, type SandboxSpec } from '../../../../activities/docker/sandbox-container';
import { turnLimitsFrom } from '../../../../agent/settings/host-settings';

const spec = (limits: SandboxSpec['limits']): SandboxSpec => ({
  jobId: 'job_1', groupId: 'grp_1', generation: 3, attemptId: 'att_1', hostId: 'host-1', uid: 10001, image: 'agent-sandbox:base', limits,
});

describe('sandbox container options', () => {
  it('caps memory and CPUs with the limits of the turn that creates the container', () => {
    const limits = turnLimitsFrom({
      turn_time_limit_seconds: 60, container_memory_mib: 768, container_cpus: 1.25, repository_max_mib: 1,
      command_timeout_seconds: 1, command_output_max_kib: 1, file_read_max_kib: 1,
    });
    const options = sandboxContainerOptions('sbx-grp_1', spec({ memoryBytes: limits.memoryBytes, nanoCpus: limits.nanoCpus }));
    assert.equal(options.HostConfig?.Memory, 768 * 1024 * 1024);
    assert.equal(options.HostConfig?.NanoCpus, 1_250_000_000);
    assert.equal(options.HostConfig?.NetworkMode, 'none');
    assert.equal(options.Labels?.[SANDBOX_LABELS.generation], '3');
    assert.equal(options.name, 'sbx-grp_1');
  });

  it('fits a CPU cap to the host: above its CPU count it becomes the count, below it stays', () => {
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 64e9 }, 2), { memoryBytes: 1, nanoCpus: 2e9 });
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 1.5e9 }, 2), { memoryBytes: 1, nanoCpus: 1.5e9 });
    assert.deepEqual(fitLimitsToHost({ memoryBytes: 1, nanoCpus: 2e9 }, 0), { memoryBytes: 1, nanoCpus: 1e9 }, 'an engine reporting no CPUs still allows one');
  });
});
