/**
 * The operator's view of an execution host (docs/agent-hosts.md): online/stale by the last heartbeat,
 * slots saved / reported / effective / default, and the display state of a pending slot change
 * (`applying N`, `N not applied`, `redeploy to change`).
 */
import { appliesRemoteSlots } from '../../workflows/definitions/host';
import { effectiveSlots } from './placement';
import { EXECUTION_PROFILES, type ExecutionProfile } from '../../lib/execution-profiles';
import type { z } from 'zod';
import type { preflightSchema } from '../../lib/contracts/host-api';

/** A runner's runtime preflight as stored (`agent_hosts.preflight`). */
export type Preflight = z.infer<typeof preflightSchema>;

/** The runner-version rule lives beside the host workflow, which judges slot changes with it too. */
export { appliesRemoteSlots, REMOTE_SLOTS_RUNNER_VERSION } from '../../workflows/definitions/host';

/** The `agent_hosts` columns the view reads. */
export interface HostRow {
  host_id: string;
  slots_saved: number | null;
  slots_total: number | null;
  runtime: string | null;
  runner_version: string | null;
  capabilities: string[];
  /** The runner's last runtime preflight (null: none reported). */
  preflight: Preflight | null;
  enrolled_at: Date;
  last_heartbeat_at: Date | null;
  removal_requested_at: Date | null;
  /** Seconds since the last heartbeat by the database clock; null when never heartbeated. */
  heartbeat_age_seconds: number | null;
}

export interface HostSlotsView {
  saved: number | null;
  reported: number | null;
  effective: number;
  default: number;
  display: string | null;
}

export interface HostView {
  host_id: string;
  online: boolean;
  stale: boolean;
  slots: HostSlotsView;
  running_turns: number;
  runtime: string | null;
  runner_version: string | null;
  capabilities: string[];
  /** Per execution profile: whether this host may take its turns, and if not why (docs/execution-profiles.md). */
  execution_profiles: Record<ExecutionProfile, ProfileAttestation>;
  /** `AGENT_SANDBOX_BACKEND=container` on this host: untrusted work runs on its kernel by the operator's choice. */
  shared_kernel_accepted: boolean;
  /** The runner's last preflight as reported (kernels, runtimes probed), or null. */
  preflight: Preflight | null;
  last_heartbeat_at: string | null;
  enrolled_at: string;
  removal_requested_at: string | null;
}

export interface ProfileAttestation {
  attested: boolean;
  /** Why the host cannot take this profile's work; null when it can. */
  reason: string | null;
}

/** What a host attests per profile, with the preflight's reason for each one it does not. */
export function profileAttestations(capabilities: readonly string[], preflight: Preflight | null): Record<ExecutionProfile, ProfileAttestation> {
  const entries = EXECUTION_PROFILES.map((profile) => {
    if (capabilities.includes(profile)) return [profile, { attested: true, reason: null }] as const;
    const reason = preflight?.refused[profile]
      ?? (preflight ? 'the preflight did not attest it' : 'the runner reported no runtime preflight (a runner older than execution profiles, or none yet)');
    return [profile, { attested: false, reason }] as const;
  });
  return Object.fromEntries(entries) as Record<ExecutionProfile, ProfileAttestation>;
}

export interface HostViewContext {
  /** `AGENT_HOST_STALE_SECONDS`. */
  staleSeconds: number;
  /** `AGENT_HOST_SLOTS`, the environment default a runner reports when nothing is saved. */
  defaultSlots: number;
}

/**
 * The display state of the saved slots: `N not applied` while the host is offline, `redeploy to
 * change` for a runner that ignores remote changes, `applying N` while a raise waits for the
 * runner's confirming heartbeat; null when nothing is pending (a lowering already holds, since
 * admission uses the lower number).
 */
export function slotsDisplay(options: { saved: number | null; reported: number | null; online: boolean; runnerVersion: string | null }): string | null {
  const { saved, reported, online, runnerVersion } = options;
  if (saved === null || saved === reported) return null;
  if (!online) return `${saved} not applied`;
  if (!appliesRemoteSlots(runnerVersion)) return 'redeploy to change';
  if (reported === null || saved > reported) return `applying ${saved}`;
  return null;
}

/** The view of one host row with its count of running attempts. */
export function hostView(row: HostRow, runningTurns: number, context: HostViewContext): HostView {
  const fresh = row.heartbeat_age_seconds !== null && row.heartbeat_age_seconds < context.staleSeconds;
  return {
    host_id: row.host_id,
    online: fresh,
    stale: row.heartbeat_age_seconds !== null && !fresh,
    slots: {
      saved: row.slots_saved,
      reported: row.slots_total,
      effective: effectiveSlots(row, context.defaultSlots),
      default: context.defaultSlots,
      display: slotsDisplay({ saved: row.slots_saved, reported: row.slots_total, online: fresh, runnerVersion: row.runner_version }),
    },
    running_turns: runningTurns,
    runtime: row.runtime,
    runner_version: row.runner_version,
    capabilities: row.capabilities,
    execution_profiles: profileAttestations(row.capabilities, row.preflight),
    shared_kernel_accepted: row.preflight?.shared_kernel_accepted ?? false,
    preflight: row.preflight,
    last_heartbeat_at: row.last_heartbeat_at?.toISOString() ?? null,
    enrolled_at: row.enrolled_at.toISOString(),
    removal_requested_at: row.removal_requested_at?.toISOString() ?? null,
  };
}
