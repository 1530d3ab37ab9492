/**
 * Docker for tests: containers from `agent-sandbox:base` carrying this run's label, removed
 * by the test that made them and, as a backstop, by the root hook at the end of the run.
 */
import Docker from 'dockerode';
import { rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MANAGED_LABEL } from '../../activities/docker/sandbox-command';
import { DEFAULT_RUNTIMES, dockerRuntimeFor, type SandboxRuntimes } from '../../activities/docker/container-runtime';
import { SAFE_PROFILE, type ExecutionProfile } from '../../lib/execution-profiles';
import { runPreflight, type Preflight } from '../../activities/docker/runtime-preflight';
import { sweepSandboxDisks } from '../../activities/docker/sandbox-removal';

export const SANDBOX_IMAGE = 'agent-sandbox:base';
export const TEST_RUN_LABEL = 'agent.test-run';
/** Identifies this test process's containers. */
export const testRunId = `${process.pid}-${Date.now().toString(36)}`;

/**
 * This test process's sandbox disk directory (activities/docker/sandbox-disk.ts; a host runner's
 * `AGENT_SANDBOX_DISK_DIR`): its own, so no two test processes share a disk name. Disks whose
 * container is gone are released by {@link removeContainers}, and the directory at the end of the run.
 */
export const TEST_DISK_ROOT = join(tmpdir(), 'agent-test-disks', testRunId);

let client: Docker | undefined;
export function docker(): Docker {
  client ??= new Docker({ socketPath: process.env.DOCKER_SOCKET_PATH ?? '/var/run/docker.sock' });
  return client;
}

/**
 * The Docker runtime the sandbox suites run under: `AGENT_TEST_RUNTIME` (`runsc`, the default:
 * gVisor, what `untrusted-vm-v1` work gets; or `runc`: the shared kernel), so `npm test` runs them
 * under each. Stacks with a host runner get the runtimes that put their chats' sandboxes there.
 */
export const TEST_RUNTIME: 'runsc' | 'runc' = (() => {
  const value = process.env.AGENT_TEST_RUNTIME;
  if (value === undefined || value === '' || value === 'runsc') return 'runsc';
  if (value === 'runc') return 'runc';
  throw new Error(`AGENT_TEST_RUNTIME=${value}: use runsc or runc`);
})();

/** A host's runtimes that run this suite's untrusted chats under {@link TEST_RUNTIME} (`runc`: the shared kernel accepted). */
export const TEST_RUNTIMES: SandboxRuntimes = { ...DEFAULT_RUNTIMES, backend: TEST_RUNTIME === 'runc' ? 'container' : 'vm' };

/** The Docker runtime of `profile` on a host with {@link TEST_RUNTIMES}, as container creation takes it. */
export function testRuntime(profile: ExecutionProfile = SAFE_PROFILE): { name: string; isolating: boolean } {
  return dockerRuntimeFor(TEST_RUNTIMES, profile);
}

/** Labels every test container carries. */
export function testLabels(extra: Record<string, string> = {}): Record<string, string> {
  return { ...extra, [MANAGED_LABEL]: 'true', [TEST_RUN_LABEL]: testRunId };
}

/** Creates and starts a long-lived labelled container (`sleep infinity`). */
export async function startTestContainer(extraLabels: Record<string, string> = {}): Promise<Docker.Container> {
  const container = await docker().createContainer({
    Image: SANDBOX_IMAGE,
    Cmd: ['sleep', 'infinity'],
    Labels: testLabels(extraLabels),
    HostConfig: { Runtime: testRuntime().name, NetworkMode: 'none', AutoRemove: false },
  });
  await container.start();
  return container;
}

/** Runs a command in a running container; returns exit code and combined output. */
export async function execIn(container: Docker.Container, cmd: string[]): Promise<{ exitCode: number; output: string }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: true });
  const stream = await exec.start({ hijack: true, stdin: false, Tty: true });
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const info = await exec.inspect();
  return { exitCode: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString('utf8') };
}

/** The running container of a chat (its `agent.chat` label); fails the test when there is none. */
export async function chatContainer(jobId: string): Promise<Docker.Container> {
  const [container] = await docker().listContainers({ filters: { label: [`agent.chat=${jobId}`] } });
  if (!container) throw new Error(`chat ${jobId} has no running container`);
  return docker().getContainer(container.Id);
}

/** A file's text in a chat's running container (`cat` as root); fails the test when it cannot be read. */
export async function fileInChat(jobId: string, path: string): Promise<string> {
  const read = await execIn(await chatContainer(jobId), ['cat', path]);
  if (read.exitCode !== 0) throw new Error(`cat ${path}: ${read.output}`);
  return read.output;
}

/**
 * Removes every container carrying `labels` (default: this run's), then releases every disk of
 * {@link TEST_DISK_ROOT} whose container is gone (also those of containers a test removed itself).
 * Returns how many containers.
 */
export async function removeContainers(labels: Record<string, string> = { [TEST_RUN_LABEL]: testRunId }): Promise<number> {
  const filters = { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) };
  const found = await docker().listContainers({ all: true, filters });
  await Promise.all(found.map((c) => docker().getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  await sweepSandboxDisks(docker(), TEST_DISK_ROOT);
  return found.length;
}

/** End of the run: this process's disk directory goes once its disks are released (a disk still in use keeps it). */
export async function removeTestDiskRoot(): Promise<void> {
  await sweepSandboxDisks(docker(), TEST_DISK_ROOT);
  await rmdir(TEST_DISK_ROOT).catch(() => undefined);
  await rmdir(dirname(TEST_DISK_ROOT)).catch(() => undefined); // shared by test processes: only when empty
}

let preflight: Promise<Preflight> | undefined;
/** This machine's runtime preflight with {@link TEST_RUNTIMES}, run once per test process. */
export function testPreflight(): Promise<Preflight> {
  preflight ??= runPreflight({ docker: docker(), image: SANDBOX_IMAGE, runtimes: TEST_RUNTIMES, labels: testLabels() }).then((result) => {
    if (!result.attestations.includes('untrusted-vm-v1')) throw new Error(`this machine's preflight attests no untrusted-vm-v1: ${JSON.stringify(result.refused)}`);
    return result;
  });
  return preflight;
}

/**
 * The command lines of every process inside a running container, read from its own `/proc` (as
 * root): what the sandbox's kernel runs, under any runtime (`docker top` lists host processes, and
 * a gVisor sandbox's processes are not the host's).
 */
export async function containerCommands(containerId: string): Promise<string[]> {
  const { output } = await execIn(docker().getContainer(containerId), ['sh', '-c', 'for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] || tr "\\0" " " < "$p/cmdline" 2>/dev/null; echo; done']);
  return output.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.includes('/proc/[0-9]*'));
}
