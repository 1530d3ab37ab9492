/**
 * Host-side effects of the sandbox lifecycle (docs/sandboxes.md "Lifecycle"): observe, stop and
 * remove a group's container, always by its name `sbx-<groupId>` compared with the recorded
 * container id and the `agent.generation` label, so an action never touches another incarnation of
 * the group. Each is idempotent: stopping a stopped container and removing a missing one report
 * what is there now. Removal never stops anything: a running container is reported, not removed; a
 * removed container's disk (sandbox-disk.ts) is released with it.
 */
import type Docker from 'dockerode';
import type { ContainerObservation, ContainerRemoval } from '../../workflows/definitions/sandbox-group';
import { inspectOrUndefined, SANDBOX_LABELS } from './sandbox-container';
import { releaseDiskOfMissingContainer, removeContainerAndDisk } from './sandbox-removal';

export interface ExactContainer {
  containerName: string;
  containerId: string;
  generation: number;
}

/** Seconds Docker waits after SIGTERM before SIGKILL when stopping a sandbox. */
const STOP_GRACE_SECONDS = 10;


function observationOf(info: Docker.ContainerInspectInfo | undefined, target: ExactContainer): ContainerObservation {
  if (!info) return { condition: 'missing' };
  const generation = info.Config.Labels?.[SANDBOX_LABELS.generation];
  if (info.Id !== target.containerId || generation !== String(target.generation)) return { condition: 'mismatch', containerId: info.Id, generation };
  const condition = info.State.Running || info.State.Restarting || info.State.Paused ? 'running' : info.State.Dead || info.State.Status === 'dead' ? 'dead' : 'stopped';
  return { condition, containerId: info.Id, generation };
}

/** How the group's container is now. */
export async function observeSandboxContainer(docker: Docker, target: ExactContainer): Promise<ContainerObservation> {
  return observationOf(await inspectOrUndefined(docker, target.containerName), target);
}

/** Stops the exact container (when it is that container and running), then observes it. */
export async function stopExactContainer(docker: Docker, target: ExactContainer): Promise<ContainerObservation> {
  const before = await observeSandboxContainer(docker, target);
  if (before.condition !== 'running') return before;
  try {
    // By id, not by name: a container recreated under the name in between is not ours to stop.
    await docker.getContainer(target.containerId).stop({ t: STOP_GRACE_SECONDS });
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== 304 && status !== 404) throw err;
  }
  return observeSandboxContainer(docker, target);
}

/**
 * Removes the exact container if it is stopped or dead, then releases its disk; missing: already
 * removed (its disk is released, should an earlier removal have stopped short of that). Never a
 * running one. `diskRoot` is this host's `AGENT_SANDBOX_DISK_DIR`.
 */
export async function removeExactStoppedContainer(docker: Docker, target: ExactContainer, diskRoot: string): Promise<ContainerRemoval> {
  const info = await inspectOrUndefined(docker, target.containerName);
  const seen = observationOf(info, target);
  if (seen.condition === 'missing' || !info) {
    await releaseDiskOfMissingContainer(docker, target.containerName, diskRoot);
    return { removed: true };
  }
  if (seen.condition !== 'stopped' && seen.condition !== 'dead') return { removed: false, observation: seen };
  try {
    // By id and without force: Docker itself refuses to remove a container that started meanwhile.
    await removeContainerAndDisk(docker, info, { force: false, diskRoot });
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 409) return { removed: false, observation: await observeSandboxContainer(docker, target) };
    throw err;
  }
  const after = await observeSandboxContainer(docker, target);
  return after.condition === 'missing' ? { removed: true } : { removed: false, observation: after };
}
