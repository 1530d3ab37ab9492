/**
 * Execution profiles: the isolation a chat's sandbox runs under (docs/execution-profiles.md).
 *
 * - `untrusted-vm-v1` (the default): model-written code runs under its own guest kernel (the
 *   isolating runtime, gVisor's `runsc`); only a host whose preflight saw a guest kernel different
 *   from its own attests it, unless its operator set `AGENT_SANDBOX_BACKEND=container`.
 * - `trusted-v1`: the host's kernel, shared with the sandbox (`runc`); only for repositories an
 *   operator reviewed (`AGENT_TRUSTED_REPOSITORIES`).
 *
 * A profile is chosen by the control plane when a job is created and recorded on the job and its
 * sandbox group; nothing inside a sandbox can change it. Both the control plane and host runners
 * use these names (settings, the heartbeat contract, admission), so they live in `lib/`.
 */

export const EXECUTION_PROFILES = ['untrusted-vm-v1', 'trusted-v1'] as const;
export type ExecutionProfile = (typeof EXECUTION_PROFILES)[number];

/** The profile of work that names none (older turns, histories from before profiles): the safe one. */
export const SAFE_PROFILE: ExecutionProfile = 'untrusted-vm-v1';

/** Host attestations besides the profiles themselves (reported in the heartbeat's `capabilities`). */
export const HOST_ATTESTATIONS = {
  /** Groups share one retained container between a chat's members. */
  sharedSandbox: 'shared-sandbox-v1',
  /** The runner answers a native CLI's questions (docs/agent-drivers.md "Native questions"). */
  sandboxHelper: 'sandbox-helper-3',
  /**
   * The runner's fork helper cuts a member's native session back to an earlier turn (docs/sandboxes.md
   * "Forks"). v2: the native CLIs' sessions too (a v1 runner would resume a CLI fork from the latest turn).
   */
  nativeForkAtAnchor: 'native-fork-at-anchor-v1',
} as const;

/**
 * The fork helper version a sandbox group records (`agent_sandboxes.fork_helper_version`,
 * docs/sandboxes.md "Forks"). 2: groups from before forks (their native sessions carry no turn
 * marks, so a fork can only copy them whole: at the latest turn). 3: groups whose built-in
 * sessions mark where each turn ends, so a built-in chat can be forked at any earlier turn.
 * 4: groups created since, whose Codex and Claude Code sessions mark their turns too.
 */
export const FORK_HELPER_VERSION = 4;
/** The lowest group version a fork at an earlier turn (a historical fork) needs, by driver. */
export const FORK_AT_ANCHOR_MIN_VERSION = { builtin: 3, cli: 4 } as const;

/** `AGENT_SANDBOX_BACKEND`: `vm` runs untrusted work under the isolating runtime; `container` accepts a shared kernel for it. */
export const SANDBOX_BACKENDS = ['vm', 'container'] as const;
export type SandboxBackend = (typeof SANDBOX_BACKENDS)[number];

export function isExecutionProfile(value: unknown): value is ExecutionProfile {
  return typeof value === 'string' && (EXECUTION_PROFILES as readonly string[]).includes(value);
}
