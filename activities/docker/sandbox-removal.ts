/**
 * Removing a sandbox container together with its disk (sandbox-disk.ts). Every path that removes a
 * group container goes through here: the lifecycle's delete and archive-and-delete
 * (sandbox-lifecycle.ts), a failed restore's cleanup, orphan removal ordered by the reconciler
 * (container-inventory.ts), and tests. The disk is released only after the container is gone, and
 * only while no container of that name exists again, under the name's disk lock (the one creation
 * and start hold), so the next incarnation's fresh disk is never the one released.
 */
import type Docker from 'dockerode';
import { sandboxContainerName } from '../../agent/sandboxes/names';
import { inspectOrUndefined } from './sandbox-container';
import {
  releaseSandboxDisk, sandboxDiskNames, sandboxDiskOfMounts, sandboxDiskPaths, withSandboxDiskLock, type SandboxDisk,
} from './sandbox-disk';

/** A container to remove: its id, and its name and mounts as inspected (its disk is found from them). */
export interface RemovableContainer {
  Id: string;
  Name: string;
  Mounts?: ReadonlyArray<{ Type?: string; Source: string; Destination: string }>;
}

function nameOf(container: { Name: string }): string {
  return container.Name.replace(/^\//, '');
}

/** Releases `disk` if no container named `name` exists (called under the name's lock). */
async function releaseIfNameFree(docker: Docker, name: string, disk: SandboxDisk): Promise<void> {
  if (await inspectOrUndefined(docker, name)) return;
  await releaseSandboxDisk(disk);
}

/**
 * Removes the container by id (`force` as the caller decides; its anonymous volumes with it), then
 * its disk: the one its `/workspace` bind names, else the one its name has under `diskRoot`.
 * Docker's errors pass through (a 409 for a running container without force leaves the disk);
 * a container already gone (404) counts as removed and its disk is released.
 */
export async function removeContainerAndDisk(
  docker: Docker, container: RemovableContainer, options: { force: boolean; diskRoot: string },
): Promise<void> {
  const name = nameOf(container);
  const disk = sandboxDiskOfMounts(container.Mounts) ?? sandboxDiskPaths(options.diskRoot, name);
  await withSandboxDiskLock(name, async () => {
    try {
      await docker.getContainer(container.Id).remove({ force: options.force, v: true });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
    await releaseIfNameFree(docker, name, disk);
  });
}

/**
 * Releases the disk of a container that no longer exists (a removal whose release was interrupted,
 * or a container removed behind the host runner's back). Nothing while a container has the name.
 */
export async function releaseDiskOfMissingContainer(docker: Docker, containerName: string, diskRoot: string): Promise<void> {
  await withSandboxDiskLock(containerName, () => releaseIfNameFree(docker, containerName, sandboxDiskPaths(diskRoot, containerName)));
}

/** Removes a group's container (forced) with its workspace and disk (tests and cleanup). False when there was none. */
export async function removeSandboxContainer(docker: Docker, groupId: string, diskRoot: string): Promise<boolean> {
  const name = sandboxContainerName(groupId);
  const info = await inspectOrUndefined(docker, name);
  if (!info) {
    await releaseDiskOfMissingContainer(docker, name, diskRoot);
    return false;
  }
  await removeContainerAndDisk(docker, info, { force: true, diskRoot });
  return true;
}

/**
 * Releases every disk under `diskRoot` whose container no longer exists (removed while the host
 * runner was down, or by hand): run at a host runner's start. Disks of existing containers, running
 * or not, are kept. Answers the names released.
 */
export async function sweepSandboxDisks(docker: Docker, diskRoot: string): Promise<string[]> {
  const released: string[] = [];
  for (const name of await sandboxDiskNames(diskRoot)) {
    await withSandboxDiskLock(name, async () => {
      if (await inspectOrUndefined(docker, name)) return;
      await releaseSandboxDisk(sandboxDiskPaths(diskRoot, name));
      released.push(name);
    });
  }
  return released;
}
