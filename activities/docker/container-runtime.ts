/**
 * The seam between execution profiles and Docker runtimes on a host (docs/execution-profiles.md
 * "Runtimes"). Every container this project creates names its runtime explicitly (never the
 * engine's default): `trusted-v1` work runs under the trusted (shared-kernel) runtime, `runc`;
 * `untrusted-vm-v1` work under the isolating runtime, gVisor's `runsc`, unless the operator set
 * `AGENT_SANDBOX_BACKEND=container`, which explicitly accepts the shared kernel for it.
 *
 * Another isolating runtime (Kata Containers, a Firecracker shim) slots in here: register it with
 * Docker under a name and set `AGENT_ISOLATING_RUNTIME` to it; the preflight then attests
 * `untrusted-vm-v1` only if its guest kernel differs from the host's, like gVisor's.
 */
import { SAFE_PROFILE, type ExecutionProfile, type SandboxBackend } from '../../lib/execution-profiles';
import type { Settings } from '../../lib/settings';

export interface SandboxRuntimes {
  /** Docker runtime name of the isolating runtime (`AGENT_ISOLATING_RUNTIME`, `runsc`). */
  isolating: string;
  /** Docker runtime name of the shared-kernel runtime (`AGENT_TRUSTED_RUNTIME`, `runc`). */
  trusted: string;
  /** `AGENT_SANDBOX_BACKEND`. */
  backend: SandboxBackend;
}

/** The defaults of a host with gVisor installed (the bootstrap's). */
export const DEFAULT_RUNTIMES: SandboxRuntimes = { isolating: 'runsc', trusted: 'runc', backend: 'vm' };

/** The Docker runtime a sandbox of `profile` runs under on this host (absent profile: the safe one). */
export function runtimeForProfile(runtimes: SandboxRuntimes, profile: ExecutionProfile | undefined): string {
  const wanted = profile ?? SAFE_PROFILE;
  if (wanted === 'trusted-v1' || runtimes.backend === 'container') return runtimes.trusted;
  return runtimes.isolating;
}

/** Whether a runtime name is the isolating one (its containers bound processes inside the guest kernel). */
function isIsolating(runtimes: SandboxRuntimes, runtime: string): boolean {
  return runtime === runtimes.isolating && runtime !== runtimes.trusted;
}

/** The Docker runtime of `profile` as container creation takes it: its name, and whether it runs its own kernel. */
export function dockerRuntimeFor(runtimes: SandboxRuntimes, profile: ExecutionProfile | undefined): { name: string; isolating: boolean } {
  const name = runtimeForProfile(runtimes, profile);
  return { name, isolating: isIsolating(runtimes, name) };
}

/** A host runner's runtimes from its settings (`AGENT_ISOLATING_RUNTIME`, `AGENT_TRUSTED_RUNTIME`, `AGENT_SANDBOX_BACKEND`). */
export function runtimesFromSettings(settings: Pick<Settings, 'AGENT_ISOLATING_RUNTIME' | 'AGENT_TRUSTED_RUNTIME' | 'AGENT_SANDBOX_BACKEND'>): SandboxRuntimes {
  return { isolating: settings.AGENT_ISOLATING_RUNTIME, trusted: settings.AGENT_TRUSTED_RUNTIME, backend: settings.AGENT_SANDBOX_BACKEND };
}
