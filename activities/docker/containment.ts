/**
 * What bounds a sandbox on its host (docs/execution-profiles.md "Containment"): the parts of a
 * container's HostConfig that come from the host settings, the same for every container this
 * project starts from the sandbox image. Pure, so each bound is unit-tested without an engine.
 *
 * - memory: `Memory` with `MemorySwap` equal to it (no swap beyond the cap);
 * - CPU: `NanoCpus`;
 * - processes: under the shared-kernel runtime the container's pids cgroup (`PidsLimit`); under the
 *   isolating runtime the guest kernel's `RLIMIT_NPROC` of the member accounts (the sandbox's
 *   own kernel counts them: one sandbox's processes never count against another's), with the host
 *   pids cgroup as a backstop for the runtime's own threads (gVisor runs several host threads per
 *   guest task, so the guest limit is reached long before the backstop);
 * - open files: `RLIMIT_NOFILE`;
 * - the places outside the sandbox's disk (sandbox-disk.ts) where a member may write: `/tmp` and
 *   `/run/lock` are tmpfs mounts of a fixed size, `/dev/shm` gets `ShmSize`. A tmpfs is memory:
 *   under runc it is charged to the container's memory cgroup, under gVisor it is the sandbox's own
 *   memory, so either way it is bounded twice (its size, and the memory cap).
 */
import type Docker from 'dockerode';
import type { SandboxLimits } from './sandbox-command';

/** Processes (tasks) one sandbox may hold when the limits name none. */
export const DEFAULT_SANDBOX_PIDS = 1024;
/** Open files per process when the limits name none. */
export const DEFAULT_SANDBOX_OPEN_FILES = 16_384;

/** `/tmp` is a quarter of the memory cap, at most this. */
export const MAX_TMP_BYTES = 1024 ** 3;
/** `/dev/shm` (Docker's own default, stated so it is documented and tested). */
export const SHM_BYTES = 64 * 1024 * 1024;
/** `/run/lock`: lock files only. */
export const RUN_LOCK_BYTES = 8 * 1024 * 1024;

/** Host threads the isolating runtime may use per guest task, and its own, before the backstop refuses more. */
const ISOLATING_THREADS_PER_TASK = 16;
const ISOLATING_BASE_THREADS = 1024;

export interface ContainmentInput {
  limits: SandboxLimits;
  /** The Docker runtime the container runs under (always named: never the engine's default). */
  runtime: string;
  /** Whether `runtime` runs its own guest kernel (processes bounded inside it). */
  isolating: boolean;
}

/** The HostConfig fields that contain a sandbox. */
export function containmentHostConfig(input: ContainmentInput): Docker.HostConfig {
  const pids = input.limits.pids ?? DEFAULT_SANDBOX_PIDS;
  const openFiles = input.limits.openFiles ?? DEFAULT_SANDBOX_OPEN_FILES;
  const ulimits = [{ Name: 'nofile', Soft: openFiles, Hard: openFiles }];
  if (input.isolating) ulimits.push({ Name: 'nproc', Soft: pids, Hard: pids });
  return {
    Runtime: input.runtime,
    Memory: input.limits.memoryBytes,
    MemorySwap: input.limits.memoryBytes,
    NanoCpus: input.limits.nanoCpus,
    PidsLimit: input.isolating ? pids * ISOLATING_THREADS_PER_TASK + ISOLATING_BASE_THREADS : pids,
    Ulimits: ulimits,
    NetworkMode: 'none',
    Tmpfs: tmpfsMounts(input.limits.memoryBytes),
    ShmSize: SHM_BYTES,
  };
}

/** The size of `/tmp` for a memory cap: a quarter of it, at most {@link MAX_TMP_BYTES}, in whole MiB. */
export function tmpBytesFor(memoryBytes: number): number {
  const mib = 1024 * 1024;
  return Math.max(mib, Math.floor(Math.min(MAX_TMP_BYTES, memoryBytes / 4) / mib) * mib);
}

/**
 * The world-writable directories of the sandbox image that are not on its disk, as sized tmpfs
 * mounts (`find / -xdev -perm -0002 -type d` in the image: `/tmp`, `/var/tmp`, `/run/lock`;
 * `/var/tmp` is on the disk). `/tmp` allows executables (build tools run what they unpack there);
 * Docker's tmpfs default would be `noexec`.
 */
function tmpfsMounts(memoryBytes: number): Record<string, string> {
  return {
    '/tmp': `rw,exec,nosuid,nodev,size=${tmpBytesFor(memoryBytes)},mode=1777`,
    '/run/lock': `rw,noexec,nosuid,nodev,size=${RUN_LOCK_BYTES},mode=1777`,
  };
}
