/**
 * The host runner's runtime preflight (docs/execution-profiles.md "Preflight and attestation"):
 * for each runtime the host offers, start a probe container from the sandbox image with no network,
 * read the kernel release it sees and compare it with the host's. What the host may attest follows:
 *
 * - `trusted-v1` when the trusted runtime's probe ran;
 * - `untrusted-vm-v1` when the isolating runtime's probe ran AND saw a guest kernel different
 *   from the host kernel; or, with `AGENT_SANDBOX_BACKEND=container`, when the trusted probe ran
 *   (the operator accepted the shared kernel: `shared_kernel_accepted` says so);
 * - `shared-sandbox-v1`, `sandbox-helper-3` and `native-fork-at-anchor-v1` (this runner's pins: its
 *   fork helper cuts a session at an earlier turn) whenever some profile is attested.
 *
 * A probe that fails (runtime not registered, binary gone, image missing) attests nothing for its
 * runtime and says why; the runner re-runs the preflight periodically, so a host whose `runsc`
 * disappears stops attesting `untrusted-vm-v1` at the next round and takes no new untrusted turn.
 */
import { release } from 'node:os';
import type Docker from 'dockerode';
import { HOST_ATTESTATIONS, type ExecutionProfile } from '../../lib/execution-profiles';
import type { SandboxRuntimes } from './container-runtime';
import { MANAGED_LABEL } from './sandbox-command';
import { demuxDockerLogs } from './demux';

/** What one probe container saw. */
export interface RuntimeProbe {
  runtime: string;
  ok: boolean;
  /** `uname -r` inside the probe. */
  guest_kernel?: string;
  /** Why the probe failed (the engine's or runtime's message, bounded). */
  error?: string;
  /** Milliseconds from create to exit. */
  duration_ms: number;
}

/** A whole preflight, as the heartbeat reports it and operators see it on the host. */
export interface Preflight {
  checked_at: string;
  host_kernel: string;
  backend: SandboxRuntimes['backend'];
  /** True with `AGENT_SANDBOX_BACKEND=container`: untrusted work runs on the host's kernel by the operator's choice. */
  shared_kernel_accepted: boolean;
  probes: RuntimeProbe[];
  /** The profiles and pins this host attests (its heartbeat's capabilities). */
  attestations: string[];
  /** Why a profile is not attested, by profile. */
  refused: Partial<Record<ExecutionProfile, string>>;
}

export interface PreflightOptions {
  docker: Docker;
  image: string;
  runtimes: SandboxRuntimes;
  /** The host's kernel release (default `os.release()`); tests pass another to see the comparison work. */
  hostKernel?: string;
  /** Labels on the probe containers (tests mark theirs). */
  labels?: Record<string, string>;
  /** A probe that has not exited by then fails. Default 30 s. */
  timeoutMs?: number;
}

const PROBE_TIMEOUT_MS = 30_000;

/** Runs the probes (one container per distinct runtime) and decides the attestations. */
export async function runPreflight(options: PreflightOptions): Promise<Preflight> {
  const { runtimes } = options;
  const hostKernel = options.hostKernel ?? release();
  const names = [...new Set([runtimes.trusted, ...(runtimes.backend === 'vm' ? [runtimes.isolating] : [])])];
  const probes = new Map<string, RuntimeProbe>();
  for (const runtime of names) probes.set(runtime, await probe(options, runtime));
  const trusted = probes.get(runtimes.trusted)!;
  const refused: Preflight['refused'] = {};
  const attestations: string[] = [];
  if (trusted.ok) attestations.push('trusted-v1');
  else refused['trusted-v1'] = `the trusted runtime ${runtimes.trusted} failed its probe: ${trusted.error ?? 'unknown error'}`;
  if (runtimes.backend === 'container') {
    if (trusted.ok) attestations.push('untrusted-vm-v1');
    else refused['untrusted-vm-v1'] = `AGENT_SANDBOX_BACKEND=container and the trusted runtime ${runtimes.trusted} failed its probe`;
  } else {
    const isolating = probes.get(runtimes.isolating)!;
    if (!isolating.ok) refused['untrusted-vm-v1'] = `the isolating runtime ${runtimes.isolating} failed its probe: ${isolating.error ?? 'unknown error'}`;
    else if (isolating.guest_kernel === hostKernel) refused['untrusted-vm-v1'] = `the isolating runtime ${runtimes.isolating} runs on the host kernel (${hostKernel}): no guest kernel of its own`;
    else attestations.push('untrusted-vm-v1');
  }
  if (attestations.length > 0) attestations.push(HOST_ATTESTATIONS.sharedSandbox, HOST_ATTESTATIONS.sandboxHelper, HOST_ATTESTATIONS.nativeForkAtAnchor);
  return {
    checked_at: new Date().toISOString(), host_kernel: hostKernel, backend: runtimes.backend,
    shared_kernel_accepted: runtimes.backend === 'container', probes: [...probes.values()], attestations, refused,
  };
}

/** One probe container: `uname -r` under `runtime`, no network, removed afterwards whatever happens. */
async function probe(options: PreflightOptions, runtime: string): Promise<RuntimeProbe> {
  const started = Date.now();
  let container: Docker.Container | undefined;
  try {
    container = await options.docker.createContainer({
      Image: options.image,
      Cmd: ['uname', '-r'],
      Labels: { ...options.labels, [MANAGED_LABEL]: 'true', 'agent.probe': runtime },
      HostConfig: { Runtime: runtime, NetworkMode: 'none', AutoRemove: false, Memory: 128 * 1024 * 1024, PidsLimit: 64 },
    });
    await container.start();
    const exit = await waitBounded(container, options.timeoutMs ?? PROBE_TIMEOUT_MS);
    const { stdout, stderr } = demuxDockerLogs(await container.logs({ stdout: true, stderr: true, follow: false }));
    const guest = stdout.trim();
    if (exit !== 0 || guest === '') return { runtime, ok: false, error: bounded(`exit ${exit}: ${stderr.trim()}`), duration_ms: Date.now() - started };
    return { runtime, ok: true, guest_kernel: guest.slice(0, 128), duration_ms: Date.now() - started };
  } catch (err) {
    return { runtime, ok: false, error: bounded((err as Error).message), duration_ms: Date.now() - started };
  } finally {
    await container?.remove({ force: true }).catch(() => undefined);
  }
}

async function waitBounded(container: Docker.Container, timeoutMs: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<number>((resolve) => {
    timer = setTimeout(() => resolve(-1), timeoutMs);
  });
  try {
    // dockerode types the wait result as any; the Engine API documents { StatusCode: number }.
    return await Promise.race([(container.wait() as Promise<{ StatusCode: number }>).then((r) => r.StatusCode), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function bounded(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 500);
}
