/**
 * Runs one command in a fresh, labelled container from the sandbox image and removes it
 * afterwards, whatever happens. Idempotent per activity attempt: the container name is derived
 * from the workflow and activity ids, and a leftover container of an earlier attempt is removed first.
 */
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type Docker from 'dockerode';
import { containmentHostConfig } from './containment';
import { demuxDockerLogs } from './demux';

/** Label present on every container this project creates; reconcilers and tests select on it. */
export const MANAGED_LABEL = 'agent.managed';

export interface SandboxCommandInput {
  command: string[];
  labels: Record<string, string>;
  timeoutMs: number;
  /** The profile the command runs under (default the safe `untrusted-vm-v1`). */
  executionProfile?: ExecutionProfile;
}

export interface SandboxCommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  truncated: boolean;
}

export interface SandboxLimits {
  memoryBytes: number;
  nanoCpus: number;
  /** Processes the sandbox may hold (default `DEFAULT_SANDBOX_PIDS`; docs/execution-profiles.md "Containment"). */
  pids?: number;
  /** Open files per process (default `DEFAULT_SANDBOX_OPEN_FILES`). */
  openFiles?: number;
  /** Size of a new group container's disk, bytes (default `DEFAULT_SANDBOX_DISK_BYTES`; sandbox-disk.ts). One-off commands have no disk. */
  diskBytes?: number;
}

/** Default per-sandbox caps: 4g memory and 2 CPUs per turn's sandbox. */
export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { memoryBytes: 4 * 1024 ** 3, nanoCpus: 2e9 };

export interface RunOptions {
  docker: Docker;
  image: string;
  name: string;
  /** The Docker runtime the container runs under, and whether it isolates (container-runtime.ts). */
  runtime: { name: string; isolating: boolean };
  limits?: SandboxLimits;
  /** Called while waiting, so a heartbeat can report liveness. */
  onWaiting?: () => void;
}

export class ImageMissingError extends Error {
  constructor(image: string) {
    super(`Sandbox image ${image} is not present on this host; run the bootstrap (npm start) or build it`);
    this.name = 'ImageMissing';
  }
}

/** Runs the command to completion (or kills it at the timeout) and returns its output. */
export async function runSandboxCommand(input: SandboxCommandInput, options: RunOptions): Promise<SandboxCommandResult> {
  const { docker, image, name } = options;
  const limits = options.limits ?? DEFAULT_SANDBOX_LIMITS;
  await removeIfPresent(docker, name);
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new ImageMissingError(image);
  }
  const container = await docker.createContainer({
    name,
    Image: image,
    Cmd: input.command,
    Labels: { ...input.labels, [MANAGED_LABEL]: 'true' },
    Tty: false,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: { ...containmentHostConfig({ limits, runtime: options.runtime.name, isolating: options.runtime.isolating }), AutoRemove: false },
  });
  try {
    await container.start();
    const exitCode = await waitWithTimeout(container, input.timeoutMs, options.onWaiting);
    const logs = await container.logs({ stdout: true, stderr: true, follow: false });
    return { exitCode, ...demuxDockerLogs(logs) };
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

async function waitWithTimeout(container: Docker.Container, timeoutMs: number, onWaiting?: () => void): Promise<number> {
  const ticker = onWaiting ? setInterval(onWaiting, 5000) : undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    // dockerode types the wait result as any; the Engine API documents { StatusCode: number }.
    const waited = (container.wait() as Promise<unknown>).then((r) => (r as { StatusCode: number }));
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([waited, timedOut]);
    if (outcome === 'timeout') {
      await container.kill().catch(() => undefined);
      return 124;
    }
    return outcome.StatusCode;
  } finally {
    clearTimeout(timer);
    if (ticker) clearInterval(ticker);
  }
}

async function removeIfPresent(docker: Docker, name: string): Promise<void> {
  try {
    await docker.getContainer(name).remove({ force: true });
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  }
}

/** A Docker-safe container name from arbitrary parts. */
export function containerName(...parts: string[]): string {
  return parts.join('-').toLowerCase().replace(/[^a-z0-9_.-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 120);
}
