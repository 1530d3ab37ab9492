/**
 * Retained sandbox containers on the real Docker engine: one container per group and generation,
 * reused across calls and turns, labelled and capped, members with their fixed UID, and a
 * container of another generation refused.
 */
import assert from 'node:assert/strict';
import {
  ensureSandboxContainer, SandboxGenerationMismatchError, SandboxRuntimeMismatchError, SandboxRuntimeUnavailableError, type SandboxSpec,
} from '../../activities/docker/sandbox-container';
import { removeSandboxContainer } from '../../activities/docker/sandbox-removal';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { ImageMissingError } from '../../activities/docker/sandbox-command';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId, testRuntime } from '../support/docker';

const limits = { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1.5e9 };

function spec(groupId: string, overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  return {
    jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId, generation: 1, attemptId: 'att_first', hostId: 'host-a',
    uid: 1001, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, limits, runtime: testRuntime(), extraLabels: testLabels(), ...overrides,
  };
}

const run = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };

describe('retained sandbox container', () => {
  const groupId = `grp-${testRunId}-a`;

  after(async () => {
    await removeContainers();
  });

  it('is created once, labelled and capped, and reused (started again when stopped)', async () => {
    const first = await ensureSandboxContainer(docker(), spec(groupId));
    assert.equal(first.created, true);
    assert.equal(first.containerName, `sbx-${groupId}`);
    const info = await docker().getContainer(first.containerName).inspect();
    assert.deepEqual(info.Config.Cmd, ['sleep', 'infinity']);
    assert.equal(info.HostConfig.NetworkMode, 'none');
    assert.equal(info.HostConfig.Memory, limits.memoryBytes);
    assert.equal(info.HostConfig.NanoCpus, limits.nanoCpus);
    const labels = info.Config.Labels;
    assert.equal(labels['agent.managed'], 'true');
    assert.equal(labels['agent.chat'], 'job_aaaaaaaaaaaaaaaaaaaa');
    assert.equal(labels['agent.group'], groupId);
    assert.equal(labels['agent.generation'], '1');
    assert.equal(labels['agent.attempt'], 'att_first');
    assert.equal(labels['agent.host'], 'host-a');

    const again = await ensureSandboxContainer(docker(), spec(groupId, { attemptId: 'att_second' }));
    assert.deepEqual(again, { ...first, created: false });
    const relabelled = await docker().getContainer(first.containerName).inspect();
    assert.equal(relabelled.Config.Labels['agent.attempt'], 'att_first', 'the creating attempt stays recorded');

    await docker().getContainer(first.containerName).stop({ t: 0 });
    const restarted = await ensureSandboxContainer(docker(), spec(groupId));
    assert.equal(restarted.containerId, first.containerId);
    assert.equal((await docker().getContainer(first.containerName).inspect()).State.Running, true);
  });

  it('keeps /workspace between turns and gives the member its own files and session dir', async () => {
    const { containerName } = await ensureSandboxContainer(docker(), spec(groupId));
    const turn1 = new DockerSandbox(docker(), containerName, 1001);
    const wrote = await turn1.exec(['sh', '-c', 'echo from-turn-1 > kept.txt && id -u && echo $HOME'], run);
    assert.equal(wrote.exitCode, 0, wrote.stderr);
    assert.deepEqual(wrote.stdout.trim().split('\n'), ['1001', '/home/member-1001']);

    const turn2 = new DockerSandbox(docker(), (await ensureSandboxContainer(docker(), spec(groupId))).containerName, 1001);
    const read = await turn2.exec(['sh', '-c', 'cat kept.txt; stat -c %u kept.txt; stat -c "%u %a" /home/member-1001/.agent'], run);
    assert.deepEqual(read.stdout.trim().split('\n'), ['from-turn-1', '1001', '1001 755']);
  });

  it('gives a second member its own UID and a home the first member cannot read', async () => {
    const { containerName } = await ensureSandboxContainer(docker(), spec(groupId, { uid: 1002, jobId: 'job_bbbbbbbbbbbbbbbbbbbb' }));
    const second = new DockerSandbox(docker(), containerName, 1002);
    const who = await second.exec(['id', '-un'], run);
    assert.equal(who.stdout.trim(), 'member-1002');
    const first = new DockerSandbox(docker(), containerName, 1001);
    const peek = await first.exec(['ls', '/home/member-1002'], run);
    assert.notEqual(peek.exitCode, 0);
  });

  it('refuses a container of the group with another generation', async () => {
    await assert.rejects(ensureSandboxContainer(docker(), spec(groupId, { generation: 2 })), SandboxGenerationMismatchError);
    const info = await docker().getContainer(`sbx-${groupId}`).inspect();
    assert.equal(info.Config.Labels['agent.generation'], '1', 'the existing container is untouched');
  });

  it('refuses to reuse a container under another runtime than its profile needs, and names an unusable runtime', async () => {
    const mismatched = `grp-${testRunId}-runtime`;
    const made = await ensureSandboxContainer(docker(), spec(mismatched, { runtime: { name: 'runc', isolating: false } }));
    assert.equal((await docker().getContainer(made.containerName).inspect()).HostConfig.Runtime, 'runc', 'the runtime is named on the container');
    await assert.rejects(ensureSandboxContainer(docker(), spec(mismatched, { runtime: { name: 'runsc', isolating: true } })),
      (err: Error) => err instanceof SandboxRuntimeMismatchError && /runs under the runc runtime but its execution profile needs runsc/.test(err.message));
    const missing = `nonexistent-runtime-${process.pid}`;
    await assert.rejects(ensureSandboxContainer(docker(), spec(`grp-${testRunId}-noruntime`, { runtime: { name: missing, isolating: true } })),
      (err: Error) => err instanceof SandboxRuntimeUnavailableError && err.message.includes(`The sandbox runtime ${missing} is unavailable on this host`));
  });

  it('reports a missing image as ImageMissingError', async () => {
    await assert.rejects(
      ensureSandboxContainer(docker(), spec(`grp-${testRunId}-noimg`, { image: 'agent-sandbox:does-not-exist' })),
      ImageMissingError,
    );
  });

  it('removeSandboxContainer removes the group container and tolerates a missing one', async () => {
    const other = `grp-${testRunId}-rm`;
    await ensureSandboxContainer(docker(), spec(other));
    assert.equal(await removeSandboxContainer(docker(), other, TEST_DISK_ROOT), true);
    await assert.rejects(docker().getContainer(`sbx-${other}`).inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
    assert.equal(await removeSandboxContainer(docker(), other, TEST_DISK_ROOT), false);
  });
});
