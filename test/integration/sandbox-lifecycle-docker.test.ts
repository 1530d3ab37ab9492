/**
 * The host side of the sandbox lifecycle (activities/docker/sandbox-lifecycle.ts) on the real
 * Docker engine: a group's container is observed, stopped and removed only when it is the exact
 * container (id and `agent.generation` label) the control plane recorded; removal never stops a
 * running container; every effect is idempotent.
 */
import assert from 'node:assert/strict';
import { SANDBOX_LABELS } from '../../activities/docker/sandbox-container';
import { observeSandboxContainer, removeExactStoppedContainer, stopExactContainer, type ExactContainer } from '../../activities/docker/sandbox-lifecycle';
import { docker, removeContainers, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRunId, testRuntime } from '../support/docker';

describe('sandbox lifecycle on the host: exact container by id and generation (Docker)', function () {
  this.timeout(60_000);
  let n = 0;

  after(async () => {
    await removeContainers();
  });

  /** A running group container `sbx-<group>` at `generation`. */
  async function groupContainer(generation: number): Promise<ExactContainer> {
    n += 1;
    const containerName = `sbx-lc-${testRunId}-${n}`.replace(/[^A-Za-z0-9_.-]/g, '-');
    const container = await docker().createContainer({
      name: containerName, Image: SANDBOX_IMAGE, Cmd: ['sleep', 'infinity'],
      Labels: testLabels({ [SANDBOX_LABELS.group]: containerName.slice(4), [SANDBOX_LABELS.generation]: String(generation) }),
      HostConfig: { Runtime: testRuntime().name, NetworkMode: 'none', Init: true },
    });
    await container.start();
    return { containerName, containerId: container.id, generation };
  }
  const running = async (id: string) => (await docker().getContainer(id).inspect()).State.Running;

  it('stops the exact container, keeps it, and stopping again reports it stopped', async () => {
    const target = await groupContainer(1);
    assert.equal((await observeSandboxContainer(docker(), target)).condition, 'running');
    const stopped = await stopExactContainer(docker(), target);
    assert.deepEqual(stopped, { condition: 'stopped', containerId: target.containerId, generation: '1' });
    assert.equal(await running(target.containerId), false);
    assert.equal((await stopExactContainer(docker(), target)).condition, 'stopped');
  });

  it('touches nothing of another generation or another container id', async () => {
    const target = await groupContainer(2);
    assert.equal((await stopExactContainer(docker(), { ...target, generation: 3 })).condition, 'mismatch');
    assert.equal((await stopExactContainer(docker(), { ...target, containerId: 'f'.repeat(64) })).condition, 'mismatch');
    assert.equal(await running(target.containerId), true, 'still running');
    await docker().getContainer(target.containerId).stop({ t: 1 });
    const removal = await removeExactStoppedContainer(docker(), { ...target, generation: 3 }, TEST_DISK_ROOT);
    assert.equal(removal.removed, false);
    assert.equal((await docker().getContainer(target.containerId).inspect()).Id, target.containerId, 'not removed');
  });

  it('never removes (or stops) a running container; removes a stopped one, and a missing one counts as removed', async () => {
    const target = await groupContainer(1);
    const refused = await removeExactStoppedContainer(docker(), target, TEST_DISK_ROOT);
    assert.deepEqual(refused, { removed: false, observation: { condition: 'running', containerId: target.containerId, generation: '1' } });
    assert.equal(await running(target.containerId), true);
    await docker().getContainer(target.containerId).stop({ t: 1 });
    assert.deepEqual(await removeExactStoppedContainer(docker(), target, TEST_DISK_ROOT), { removed: true });
    await assert.rejects(docker().getContainer(target.containerId).inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
    assert.deepEqual(await removeExactStoppedContainer(docker(), target, TEST_DISK_ROOT), { removed: true });
    assert.equal((await observeSandboxContainer(docker(), target)).condition, 'missing');
  });
});
