/**
 * The retained sandbox container of a group (docs/sandboxes.md "The group container"): one
 * long-lived container `sbx-<groupId>` per generation, kept between turns so `/workspace` and
 * members' native session files survive. Creation is idempotent (same group and generation: reuse,
 * start if stopped); a container of the group with another generation is refused, never silently
 * replaced. Each member is an account with its fixed UID (`member-<uid>`, home
 * `/home/member-<uid>`, session dir `.agent`).
 */
import type Docker from 'dockerode';
import { RELAY_MOUNT, sandboxContainerName } from '../../agent/sandboxes/names';
import { execInContainer } from './container-exec';
import { containmentHostConfig } from './containment';
import { ImageMissingError, MANAGED_LABEL, type SandboxLimits } from './sandbox-command';
import {
  createSandboxDisk, DEFAULT_SANDBOX_DISK_BYTES, mountSandboxDisk, releaseSandboxDisk, sandboxDiskMounts, sandboxDiskOfMounts, sandboxDiskPaths,
  withSandboxDiskLock,
} from './sandbox-disk';

export interface SandboxSpec {
  jobId: string;
  groupId: string;
  generation: number;
  /** The attempt that creates the container (recorded as a label; later attempts reuse it). */
  attemptId: string;
  hostId: string;
  /** The member's fixed UID inside the container. */
  uid: number;
  image: string;
  limits: SandboxLimits;
  /** The Docker runtime of the group's execution profile, and whether it isolates (container-runtime.ts). */
  runtime: { name: string; isolating: boolean };
  /** More labels (tests mark their containers). */
  extraLabels?: Record<string, string>;
  /** The container's model-relay directory on the host, mounted read-only at `RELAY_MOUNT` (native drivers). */
  relayDir?: string;
  /** Where this host keeps the sandboxes' disks (`AGENT_SANDBOX_DISK_DIR`, absolute; sandbox-disk.ts). */
  diskRoot: string;
}

export interface EnsuredSandbox {
  containerId: string;
  containerName: string;
  created: boolean;
}

/** Label keys every sandbox container carries (reconcilers compare them with PostgreSQL). */
export const SANDBOX_LABELS = {
  chat: 'agent.chat',
  group: 'agent.group',
  generation: 'agent.generation',
  attempt: 'agent.attempt',
  host: 'agent.host',
} as const;

/** A group's container exists with another generation (a restore or recreation is in charge). */
export class SandboxGenerationMismatchError extends Error {
  constructor(containerName: string, expected: number, found: string | undefined) {
    super(`Sandbox container ${containerName} has generation ${found ?? 'unknown'}, expected ${expected}; refusing to reuse or replace it`);
    this.name = 'SandboxGenerationMismatch';
  }
}

/**
 * A group's container runs under another runtime than its execution profile needs (made before
 * profiles, or the host's runtimes changed): reusing it would run the chat under the wrong
 * boundary. An operator archives the group; its restore recreates the container under the right one.
 */
export class SandboxRuntimeMismatchError extends Error {
  constructor(containerName: string, wanted: string, found: string) {
    super(`This chat's sandbox ${containerName} runs under the ${found} runtime but its execution profile needs ${wanted}; `
      + 'an operator can archive it (Archive to object store and delete) so the next turn restores it under the right runtime');
    this.name = 'SandboxRuntimeMismatch';
  }
}

/** The engine could not create or start the container under its runtime (not registered, binary gone, runtime error). */
export class SandboxRuntimeUnavailableError extends Error {
  constructor(runtime: string, detail: string) {
    super(`The sandbox runtime ${runtime} is unavailable on this host: ${detail.replace(/\s+/g, ' ').slice(0, 300)}`);
    this.name = 'SandboxRuntimeUnavailable';
  }
}

/** Whether an engine error is the runtime's (unknown runtime name, OCI runtime failure), not the container's. */
export function isRuntimeFailure(err: unknown): boolean {
  const message = (err as { message?: string } | undefined)?.message ?? '';
  return /unknown (or invalid )?runtime|OCI runtime|runtime .*(not found|no such file)/i.test(message);
}

/** A sandbox container that should exist does not (removed, or never created on this host). */
export class SandboxMissingError extends Error {
  constructor(containerName: string) {
    super(`Sandbox container ${containerName} does not exist on this host`);
    this.name = 'SandboxMissing';
  }
}

/** Member account names and directories for a UID. */
export function memberPaths(uid: number): { user: string; home: string; sessionDir: string } {
  if (!Number.isInteger(uid) || uid < 1000 || uid > 2 ** 31 - 2) throw new Error(`Invalid member UID ${uid}: use an integer from 1000`);
  const user = `member-${uid}`;
  return { user, home: `/home/${user}`, sessionDir: `/home/${user}/.agent` };
}

/** A container's inspection, or undefined when no container has that name or id. */
export async function inspectOrUndefined(docker: Docker, name: string): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    return await docker.getContainer(name).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return undefined;
    throw err;
  }
}

/**
 * Creates (or reuses) the group's running container and makes sure the member account exists. A
 * new container gets a new disk of `limits.diskBytes`; a stopped one gets its disk mounted again
 * (a host restart unmounts it) before it starts. Creation and start hold the container name's disk
 * lock, so a removal's release of the disk never interleaves with them.
 */
export async function ensureSandboxContainer(docker: Docker, spec: SandboxSpec): Promise<EnsuredSandbox> {
  const name = sandboxContainerName(spec.groupId);
  memberPaths(spec.uid);
  const { info, created } = await withSandboxDiskLock(name, async () => {
    const found = await inspectOrUndefined(docker, name);
    const made = found ? false : await createContainer(docker, name, spec);
    const current = found ?? await inspectAfterCreate(docker, name);
    checkReusable(current, name, spec);
    if (!current.State.Running) {
      const disk = sandboxDiskOfMounts(current.Mounts);
      if (disk) await mountSandboxDisk(disk, name);
      await startIgnoringAlreadyStarted(docker.getContainer(name), spec.runtime.name);
    }
    return { info: current, created: made };
  });
  await ensureMember(docker, name, spec.uid);
  return { containerId: info.Id, containerName: name, created };
}

/** Refuses a container of another generation or runtime (never replaced: it holds the workspace). */
function checkReusable(info: Docker.ContainerInspectInfo, name: string, spec: SandboxSpec): void {
  const labels = info.Config.Labels ?? {};
  if (labels[SANDBOX_LABELS.group] !== spec.groupId || labels[SANDBOX_LABELS.generation] !== String(spec.generation)) {
    throw new SandboxGenerationMismatchError(name, spec.generation, labels[SANDBOX_LABELS.generation]);
  }
  const runtime = info.HostConfig.Runtime ?? 'runc';
  if (runtime !== spec.runtime.name) throw new SandboxRuntimeMismatchError(name, spec.runtime.name, runtime);
}

/** After a create (ours or a concurrent one that holds the name), the container shows up shortly. */
async function inspectAfterCreate(docker: Docker, name: string): Promise<Docker.ContainerInspectInfo> {
  for (let i = 0; i < 100; i += 1) {
    const info = await inspectOrUndefined(docker, name);
    if (info) return info;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new SandboxMissingError(name);
}

/**
 * The create options of a group's container: its `agent.*` labels, its runtime and containment (the
 * host settings of the turn that creates it: containment.ts, docs/agent-admin.md "Host settings"),
 * its disk's directories bound at `/workspace`, `/home` and `/var/tmp` (sandbox-disk.ts), no
 * network, Docker's init. Pure, so the caps a new sandbox gets are unit-tested without an engine.
 */
export function sandboxContainerOptions(name: string, spec: SandboxSpec): Docker.ContainerCreateOptions {
  return {
    name,
    Image: spec.image,
    Cmd: ['sleep', 'infinity'],
    WorkingDir: '/workspace',
    Labels: {
      ...spec.extraLabels,
      [MANAGED_LABEL]: 'true',
      [SANDBOX_LABELS.chat]: spec.jobId,
      [SANDBOX_LABELS.group]: spec.groupId,
      [SANDBOX_LABELS.generation]: String(spec.generation),
      [SANDBOX_LABELS.attempt]: spec.attemptId,
      [SANDBOX_LABELS.host]: spec.hostId,
    },
    Tty: false,
    HostConfig: {
      ...containmentHostConfig({ limits: spec.limits, runtime: spec.runtime.name, isolating: spec.runtime.isolating }),
      Mounts: sandboxDiskMounts(sandboxDiskPaths(spec.diskRoot, name)),
      ...(spec.relayDir ? { Binds: [`${spec.relayDir}:${RELAY_MOUNT}:ro`] } : {}),
      // An init process reaps orphans of killed command groups.
      Init: true,
      AutoRemove: false,
    },
  };
}

/**
 * `limits` as this host can apply them: Docker refuses a CPU cap above the host's CPU count, so a
 * larger one becomes the host's count (the sandbox may use the whole host); memory is left as asked.
 */
export function fitLimitsToHost(limits: SandboxLimits, hostCpus: number): SandboxLimits {
  const most = Math.max(1, Math.floor(hostCpus)) * 1e9;
  return limits.nanoCpus > most ? { ...limits, nanoCpus: most } : limits;
}

/**
 * Creates the container on a fresh disk; false when another process created it first (its disk is
 * then left as that process made it). A creation that fails releases the disk it made.
 */
async function createContainer(docker: Docker, name: string, spec: SandboxSpec): Promise<boolean> {
  try {
    await docker.getImage(spec.image).inspect();
  } catch {
    throw new ImageMissingError(spec.image);
  }
  const disk = sandboxDiskPaths(spec.diskRoot, name);
  await createSandboxDisk(disk, spec.limits.diskBytes ?? DEFAULT_SANDBOX_DISK_BYTES);
  try {
    await docker.createContainer(sandboxContainerOptions(name, spec));
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 409) return false;
    await releaseSandboxDisk(disk).catch(() => undefined);
    if (isRuntimeFailure(err)) throw new SandboxRuntimeUnavailableError(spec.runtime.name, (err as Error).message);
    throw err;
  }
}

async function startIgnoringAlreadyStarted(container: Docker.Container, runtime: string): Promise<void> {
  try {
    await container.start();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 304) return;
    if (isRuntimeFailure(err)) throw new SandboxRuntimeUnavailableError(runtime, (err as Error).message);
    throw err;
  }
}

/** The shared group of a sandbox's members (`agent-workspace`); member UIDs start at 10001, so no member's own group takes it. */
export const WORKSPACE_GID = 9999;

/** Root script: the member account, its private home and session dir, and `/workspace` ownership. */
const MEMBER_SETUP = [
  'set -e',
  'uid="$1"; user="member-$1"; home="/home/member-$1"',
  // A concurrent setup of the same member may hold the account files' lock or win the race: retry, its account is as good as ours.
  'i=0; until getent group "$uid" >/dev/null || groupadd -g "$uid" "$user" 2>/dev/null || [ $i -ge 20 ]; do i=$((i+1)); sleep 0.2; done',
  'i=0; until getent passwd "$uid" >/dev/null || useradd -u "$uid" -g "$uid" -M -d "$home" -s /bin/bash "$user" 2>/dev/null || [ $i -ge 20 ]; do i=$((i+1)); sleep 0.2; done',
  'getent passwd "$uid" >/dev/null',
  'mkdir -p "$home/.agent" /workspace',
  'chown "$uid:$uid" "$home" "$home/.agent"',
  'chmod 700 "$home"',
  // The group's first member owns /workspace; every member is in the shared group `agent-workspace`
  // (docs/sandboxes.md "Forks"), which may write the whole tree: setgid directories keep new files in it.
  'if [ "$(stat -c %u /workspace)" = 0 ]; then chown "$uid:$uid" /workspace; fi',
  `getent group agent-workspace >/dev/null || groupadd -g ${WORKSPACE_GID} agent-workspace 2>/dev/null || getent group agent-workspace >/dev/null`,
  // Every member may run git in the one repository, whichever member owns it (git refuses a repository
  // another user owns unless the system configuration names it safe). A concurrent setup may hold the lock.
  'i=0; until git config --system --get-all safe.directory | grep -qx /workspace || git config --system --add safe.directory /workspace 2>/dev/null || [ $i -ge 20 ]; do i=$((i+1)); sleep 0.2; done',
  'git config --system --get-all safe.directory | grep -qx /workspace',
  'if ! id -nG "$user" | tr " " "\\n" | grep -qx agent-workspace; then',
  '  usermod -aG agent-workspace "$user"',
  // A member other than the owner joined (a fork): hand the tree written so far to the group once, and
  // make its repository shared (a workspace from before forks is not), so git keeps what it writes group-writable.
  '  if [ "$(stat -c %u /workspace)" != "$uid" ]; then',
  '    if [ -f /workspace/.git/config ] && [ ! -L /workspace/.git/config ]; then git config --file /workspace/.git/config core.sharedRepository group && chown "$(stat -c %u /workspace)" /workspace/.git/config; fi',
  '    chgrp -R agent-workspace /workspace && chmod -R g+rwX /workspace && find /workspace -type d -exec chmod g+s {} +',
  '  fi',
  'fi',
].join('\n');


/** Creates the member account with its fixed UID (idempotent). */
export async function ensureMember(docker: Docker, containerName: string, uid: number): Promise<void> {
  memberPaths(uid);
  const result = await execInContainer(docker, containerName, { cmd: ['sh', '-c', MEMBER_SETUP, 'member-setup', String(uid)], user: '0' });
  if (result.exitCode !== 0) throw new Error(`Setting up member ${uid} in ${containerName} failed (${result.exitCode}): ${result.stderr.trim()}`);
}
