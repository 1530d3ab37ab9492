/**
 * A sandbox's own disk (docs/execution-profiles.md "Containment"; docs/sandboxes.md "The group
 * container"): each group container gets an ext4 filesystem in a sparse image file on the host,
 * `<root>/<containerName>.img` of `container_disk_gib`, loop-mounted (`nosuid,nodev`) at
 * `<root>/<containerName>`. Its directories are bound into the container at `/workspace`, `/home`
 * (members' homes with their native sessions) and `/var/tmp`, so whatever a member writes there
 * counts against that filesystem: at its size writes fail with ENOSPC inside the sandbox and nothing
 * else on the host fills. Docker's own per-container quota (`--storage-opt size`) needs overlay2 on
 * xfs with project quotas; this works on any host filesystem that holds sparse files.
 *
 * Every operation is idempotent and safe to repeat after a crash: an image is formatted under a
 * temporary name and renamed when complete; mounting a mounted disk does nothing (and `mount -o
 * loop` reuses the loop device already attached to an image, so an image is never mounted twice);
 * releasing unmounts, then deletes, and a missing disk is already released. Creation, start and
 * removal of one container's disk run one at a time per container name in this process
 * ({@link withSandboxDiskLock}), so a release never races the creation of the next incarnation.
 */
import { constants } from 'node:fs';
import { access, chmod, mkdir, open, readdir, rename, rm, rmdir, stat, statfs } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { keyedSerializer } from '../../lib/keyed-serializer';
import { HostCommandError, runHostCommand } from './host-command';

const GIB = 1024 ** 3;

/** A new sandbox's disk when its limits name none (host setting `container_disk_gib`'s default): sparse, so it costs only what is written. */
export const DEFAULT_SANDBOX_DISK_BYTES = 20 * GIB;

/** The disk's directories and where each is bound in the container (created with these modes on a new disk). */
export const SANDBOX_DISK_DIRS: ReadonlyArray<{ dir: string; target: string; mode: number }> = [
  { dir: 'workspace', target: '/workspace', mode: 0o755 },
  { dir: 'home', target: '/home', mode: 0o755 },
  { dir: 'var-tmp', target: '/var/tmp', mode: 0o1777 },
];

/** Where one container's disk lives on the host. */
export interface SandboxDisk {
  /** The sparse ext4 image file. */
  image: string;
  /** Where it is mounted; its directories are the containers' bind sources. */
  mountPoint: string;
}

/** A disk that should exist does not: the container's workspace and homes are gone. Retrying cannot help. */
export class SandboxDiskMissingError extends Error {
  constructor(containerName: string, image: string) {
    super(`The disk of sandbox ${containerName} (${image}) is missing on this host: its workspace is lost; an operator can delete the sandbox`);
    this.name = 'SandboxDiskMissing';
  }
}

/** One lock per container name, shared by everything in this process that creates, starts or removes a sandbox. */
export const withSandboxDiskLock = keyedSerializer();

/** The disk of `containerName` under `root` (an absolute directory: Docker needs absolute bind sources). */
export function sandboxDiskPaths(root: string, containerName: string): SandboxDisk {
  if (!root.startsWith('/')) throw new Error(`The sandbox disk directory must be absolute, got ${root}`);
  return { image: join(root, `${containerName}.img`), mountPoint: join(root, containerName) };
}

/** The disk a container was created with, read from its `/workspace` bind (a container made before disks has none). */
export function sandboxDiskOfMounts(mounts: ReadonlyArray<{ Type?: string; Source: string; Destination: string }> | undefined): SandboxDisk | undefined {
  const workspace = mounts?.find((m) => m.Destination === '/workspace' && (m.Type ?? 'bind') === 'bind');
  if (!workspace || basename(workspace.Source) !== 'workspace') return undefined;
  const mountPoint = dirname(workspace.Source);
  return { image: `${mountPoint}.img`, mountPoint };
}

/**
 * The container's binds of the disk's directories. `Mounts`, not `Binds`: Docker creates a missing
 * `Binds` source as an empty directory (a sandbox would start with an empty workspace), while a
 * missing `Mounts` source is an error.
 */
export function sandboxDiskMounts(disk: SandboxDisk): Docker.MountSettings[] {
  return SANDBOX_DISK_DIRS.map(({ dir, target }) => ({ Type: 'bind', Source: join(disk.mountPoint, dir), Target: target, ReadOnly: false }));
}

/** `mkfs.ext4` arguments: quiet, no root reserve (the limit is the size), inode tables and journal left to lazy init (fast, sparse). */
export function mkfsArgs(image: string): string[] {
  return ['-q', '-F', '-m', '0', '-L', 'agent-sandbox', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', image];
}

/**
 * `mount` arguments: a loop device, no set-uid programs or device files from the sandbox's files,
 * `discard` (space freed in the sandbox is punched out of the sparse image, so the host gets it
 * back) and `noinit_itable` (the kernel does not zero the inode tables behind mkfs: they would
 * otherwise cost about 1.5% of the size in real blocks).
 */
export function mountArgs(disk: SandboxDisk): string[] {
  return ['-t', 'ext4', '-o', 'loop,nosuid,nodev,discard,noinit_itable', disk.image, disk.mountPoint];
}

/** Whether `path` is a mount point (its device differs from its parent's). */
export async function isMountPoint(path: string): Promise<boolean> {
  try {
    const [own, parent] = await Promise.all([stat(path), stat(dirname(path))]);
    return own.dev !== parent.dev;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A fresh, empty, mounted disk of `bytes` (whatever was there before is released first: a disk
 * without its container holds nothing anyone can reach). Call with no container of that name.
 */
export async function createSandboxDisk(disk: SandboxDisk, bytes: number): Promise<void> {
  if (!Number.isSafeInteger(bytes) || bytes < 64 * 1024 * 1024) throw new Error(`Invalid sandbox disk size ${bytes}: at least 64 MiB`);
  await releaseSandboxDisk(disk);
  await mkdir(dirname(disk.image), { recursive: true, mode: 0o700 });
  const part = `${disk.image}.part`;
  const handle = await open(part, 'w', 0o600);
  try {
    await handle.truncate(bytes); // sparse: no block is written
  } finally {
    await handle.close();
  }
  await runHostCommand('mkfs.ext4', mkfsArgs(part), `Formatting the sandbox disk ${part}`);
  await rename(part, disk.image);
  await mountSandboxDisk(disk, basename(disk.mountPoint));
  for (const { dir, mode } of SANDBOX_DISK_DIRS) {
    const path = join(disk.mountPoint, dir);
    await mkdir(path, { recursive: true });
    await chmod(path, mode);
  }
}

/** Mounts an existing disk (after a host restart; nothing when mounted). A missing image is {@link SandboxDiskMissingError}. */
export async function mountSandboxDisk(disk: SandboxDisk, containerName: string): Promise<void> {
  if (await isMountPoint(disk.mountPoint)) return;
  if (!(await exists(disk.image))) throw new SandboxDiskMissingError(containerName, disk.image);
  await mkdir(disk.mountPoint, { recursive: true, mode: 0o700 });
  await runHostCommand('mount', mountArgs(disk), `Mounting the sandbox disk ${disk.image}`);
}

/**
 * Mounts the disk a container was created with, if it has one, under the container name's lock:
 * before the engine reads a stopped container's files (archives, downloads), which it cannot do
 * through a bind whose source is not there.
 */
export async function mountSandboxDiskOf(container: { Name: string; Mounts?: Parameters<typeof sandboxDiskOfMounts>[0] }): Promise<void> {
  const disk = sandboxDiskOfMounts(container.Mounts);
  if (!disk) return;
  const name = container.Name.replace(/^\//, '');
  await withSandboxDiskLock(name, () => mountSandboxDisk(disk, name));
}

/** Times `umount` is tried before a lazy unmount (a runtime's process may still be letting go of it). */
const UNMOUNT_TRIES = 10;

async function unmount(mountPoint: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await runHostCommand('umount', [mountPoint], `Unmounting the sandbox disk at ${mountPoint}`);
      return;
    } catch (err) {
      if (!(err instanceof HostCommandError) || !/busy/i.test(err.message)) throw err;
      if (attempt >= UNMOUNT_TRIES) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  // Still held: detach it now; the kernel frees the loop device (and the image's blocks) when the last user lets go.
  await runHostCommand('umount', ['-l', mountPoint], `Detaching the busy sandbox disk at ${mountPoint}`);
}

/** Unmounts and deletes a disk (its container is gone). A disk that is not there is released already. */
export async function releaseSandboxDisk(disk: SandboxDisk): Promise<void> {
  if (await isMountPoint(disk.mountPoint)) await unmount(disk.mountPoint);
  await rm(disk.image, { force: true });
  await rm(`${disk.image}.part`, { force: true });
  try {
    // rmdir, never a recursive delete: a directory that is somehow still a mount point (or not empty) is left alone.
    await rmdir(disk.mountPoint);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new Error(`Removing the sandbox disk's mount point ${disk.mountPoint} failed: ${(err as Error).message}`, { cause: err });
  }
}

/** Bytes of a mounted disk (total, used, available to the sandbox); undefined when it is not mounted. */
export async function sandboxDiskUsage(disk: SandboxDisk): Promise<{ totalBytes: number; usedBytes: number; freeBytes: number } | undefined> {
  if (!(await isMountPoint(disk.mountPoint))) return undefined;
  const fs = await statfs(disk.mountPoint);
  return { totalBytes: fs.blocks * fs.bsize, usedBytes: (fs.blocks - fs.bfree) * fs.bsize, freeBytes: fs.bavail * fs.bsize };
}

/** Below this many free bytes a sandbox's disk counts as full (a write of a few pages fails). */
export const DISK_FULL_BYTES = 16 * 1024 * 1024;

/** The usage of a container's disk now; undefined for a container without one (or one that cannot be read). */
export async function containerDiskUsage(docker: Docker, containerName: string): Promise<{ totalBytes: number; freeBytes: number } | undefined> {
  try {
    const disk = sandboxDiskOfMounts((await docker.getContainer(containerName).inspect()).Mounts);
    return disk ? await sandboxDiskUsage(disk) : undefined;
  } catch {
    return undefined;
  }
}

/** The container names that have a disk (or the remains of one) under `root`. */
export async function sandboxDiskNames(root: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const names = new Set(entries.filter((e) => !e.startsWith('.')).map((e) => e.replace(/\.img(\.part)?$/, '')));
  return [...names].sort();
}

/**
 * Proves at a host runner's start that `root` can hold sandbox disks (a small disk made, mounted
 * and released), so a host that cannot (no root, no `mkfs.ext4`, no loop devices) fails at once
 * with the fix instead of failing every sandbox later.
 */
export async function probeSandboxDisks(root: string): Promise<void> {
  const probe = sandboxDiskPaths(root, `.probe-${process.pid}`);
  try {
    await createSandboxDisk(probe, 64 * 1024 * 1024);
    await releaseSandboxDisk(probe);
  } catch (err) {
    await releaseSandboxDisk(probe).catch(() => undefined);
    throw new Error(`AGENT_SANDBOX_DISK_DIR=${root} cannot hold sandbox disks: ${(err as Error).message}. `
      + 'The host runner makes one loop-mounted ext4 image per sandbox there: it needs root, mkfs.ext4 (Debian package e2fsprogs), '
      + 'loop devices (/dev/loop-control) and a filesystem that holds sparse files', { cause: err });
  }
}
