/**
 * What an owner reads when a turn fails because its sandbox ran out of space (docs/execution-profiles.md
 * "Containment"): the sandbox's own disk (`/workspace`, the homes, `/var/tmp`; host setting
 * `container_disk_gib`) or one of its tmpfs mounts is full. The driver's own message ("cat: write
 * error: No space left on device") says what failed but not why nor what to do; the turn's message
 * starts with that, and the rest of the host and the other sandboxes are not concerned.
 */
import type Docker from 'dockerode';
import { containerDiskUsage, DISK_FULL_BYTES } from '../docker/sandbox-disk';

const NO_SPACE = /No space left on device|ENOSPC/i;

function gib(bytes: number): string {
  const value = bytes / 1024 ** 3;
  return value >= 10 ? value.toFixed(0) : value.toFixed(1);
}

/**
 * The failure message of a turn whose driver failed with `message`: prefixed with a plain sentence
 * when the sandbox's disk is full now, or when the message itself says a write found no space;
 * unchanged otherwise.
 */
export async function explainNoSpace(docker: Docker, containerName: string, message: string): Promise<string> {
  const disk = await containerDiskUsage(docker, containerName);
  if (disk && disk.freeBytes < DISK_FULL_BYTES) {
    return `The sandbox's disk is full (${gib(disk.totalBytes)} GiB for /workspace, the home directories and /var/tmp; host setting container_disk_gib): `
      + `delete files in the next turn, or ask an operator for a larger disk for new sandboxes. ${message}`;
  }
  if (NO_SPACE.test(message)) {
    return `The sandbox ran out of space (its disk for /workspace and the home directories, or its /tmp): delete files in the next turn. ${message}`;
  }
  return message;
}
