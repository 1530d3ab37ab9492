/**
 * Host settings: the sandbox and workspace limits of the agent platform
 * (`PUT /admin/agent/host-settings`; docs/agent-admin.md "Host settings"). They are admin settings
 * of their own route: stored in the same `agent_settings` table under their own keys, saved with
 * the same change marker and synced by the same per-process copy (settings-sync.ts), so a change
 * reaches the control worker within 5 s.
 *
 * Each setting says where it takes effect (`appliesTo`, shown by GET as `applies_to`):
 * - `new_turns`: read when a turn is admitted (agent/jobs/turn-admission.ts), recorded on its
 *   attempt (`agent_attempts.limits`) and used for that turn only; a running turn keeps its own;
 * - `new_sandboxes`: passed with the admitted turn to the host that creates the group's container
 *   (a container that exists is reused as it is), e.g. its disk (`container_disk_gib`);
 * - `running_sandboxes`: read by the idle stop each minute (agent/sandboxes/idle-stop.ts, the
 *   Schedule `agent-idle-sandbox-stop`) and applied to every running sandbox, existing ones included;
 * - `new_forks`: read when an owner forks a chat (agent/jobs/fork.ts): a fork that would take its
 *   sandbox group above the limit is refused; members already in a group stay;
 * - `stored_only`: validated and kept for a feature that will apply it; nothing enforces it (no
 *   setting has this scope today).
 *
 * Keys that would apply only to features this project does not have (terminals) are not
 * settings at all ({@link RETIRED_HOST_SETTINGS}): a PUT naming one is a 400 that says why, so no
 * setting is saved that does nothing.
 */
import { z } from 'zod';
import type { Settings } from '../../lib/settings';
import type { PlainDefinition } from './admin-settings';

/** Where a host setting takes effect. */
export type HostSettingScope = 'new_turns' | 'new_sandboxes' | 'running_sandboxes' | 'new_forks' | 'stored_only';

interface HostDefinition<T> extends PlainDefinition<T> {
  appliesTo: HostSettingScope;
}

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const KIB = 1024;
const integer = (min: number, max: number) => z.number().int().min(min).max(max);

/** Built-in defaults of the limits that have no environment variable. */
export const HOST_SETTING_DEFAULTS: Readonly<Record<'repository_max_mib' | 'command_timeout_seconds' | 'command_output_max_kib' | 'file_read_max_kib'
  | 'container_pids' | 'container_open_files' | 'container_disk_gib' | 'sessions_per_sandbox', number>> = Object.freeze({
  container_pids: 1024,
  container_open_files: 16_384,
  // Sparse: a sandbox costs the host only what it writes, so every sandbox can be bounded by default.
  container_disk_gib: 20,
  repository_max_mib: 10_240,
  command_timeout_seconds: 600,
  command_output_max_kib: 64,
  file_read_max_kib: 256,
  // The original chat and three forks: each member holds its own native session and shares the container's CPU and memory.
  sessions_per_sandbox: 4,
});

/**
 * Former host settings and why they are not settings (docs/agent-admin.md "Host settings"): each
 * limits a feature this project does not have, so a saved value would do nothing. A PUT naming
 * one is refused with this reason; migration 20261127010000_agent_host_settings_retired deleted
 * their saved values, and a value saved again by an older process is ignored (logged as not
 * applied). They come back, with their enforcement, when terminals do. (`sessions_per_sandbox`
 * came back with forks: it is a setting again.)
 */
export const RETIRED_HOST_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  terminals_per_sandbox: 'removed: sandboxes have no terminals yet; the limit comes back with terminals',
  terminal_idle_timeout_seconds: 'removed: sandboxes have no terminals yet; the timeout comes back with terminals',
});

/** Every host setting. A new key: add it here and document it in docs/agent-admin.md "Host settings". */
export const HOST_SETTING_DEFINITIONS = {
  /** The overall limit of one turn, seconds (the runner's execution timeout). */
  turn_time_limit_seconds: {
    credential: false, appliesTo: 'new_turns', schema: integer(60, 86_400), fallback: (env: Settings) => env.AGENT_TURN_TIME_LIMIT_SECONDS,
  } satisfies HostDefinition<number>,
  /** Largest checkout (with its `.git`) a new sandbox clones, MiB. */
  repository_max_mib: {
    credential: false, appliesTo: 'new_sandboxes', schema: integer(1, 102_400), fallback: () => HOST_SETTING_DEFAULTS.repository_max_mib,
  } satisfies HostDefinition<number>,
  /** CPU cap of a new sandbox container, in CPUs (default 2). */
  container_cpus: {
    credential: false, appliesTo: 'new_sandboxes', schema: z.number().min(0.25).max(64), fallback: (env: Settings) => env.AGENT_SANDBOX_CPUS,
  } satisfies HostDefinition<number>,
  /** Memory cap of a new sandbox container, MiB (default 4g). */
  container_memory_mib: {
    credential: false, appliesTo: 'new_sandboxes', schema: integer(256, 262_144), fallback: (env: Settings) => Math.floor(env.AGENT_SANDBOX_MEMORY_BYTES / MIB),
  } satisfies HostDefinition<number>,
  /** Processes (tasks) one new sandbox may hold: its pids cgroup, or its guest kernel's process limit (docs/execution-profiles.md "Containment"). */
  container_pids: {
    credential: false, appliesTo: 'new_sandboxes', schema: integer(64, 65_536), fallback: () => HOST_SETTING_DEFAULTS.container_pids,
  } satisfies HostDefinition<number>,
  /** Open files per process in a new sandbox (`RLIMIT_NOFILE`). */
  container_open_files: {
    credential: false, appliesTo: 'new_sandboxes', schema: integer(256, 1_048_576), fallback: () => HOST_SETTING_DEFAULTS.container_open_files,
  } satisfies HostDefinition<number>,
  /** Size of a new sandbox's own disk (its `/workspace`, `/home` and `/var/tmp`), GiB (docs/execution-profiles.md "Containment"). */
  container_disk_gib: {
    credential: false, appliesTo: 'new_sandboxes', schema: integer(1, 10_240), fallback: () => HOST_SETTING_DEFAULTS.container_disk_gib,
  } satisfies HostDefinition<number>,
  /** Chats (the original and its forks) one sandbox group may hold; a fork above it is refused (docs/sandboxes.md "Forks"). */
  sessions_per_sandbox: {
    credential: false, appliesTo: 'new_forks', schema: integer(1, 64), fallback: () => HOST_SETTING_DEFAULTS.sessions_per_sandbox,
  } satisfies HostDefinition<number>,
  /** Seconds a running sandbox may stay idle before the idle stop stops it; none (never) by default. */
  idle_timeout_seconds: {
    credential: false, appliesTo: 'running_sandboxes', schema: integer(60, 604_800), fallback: (): number | null => null,
  } satisfies HostDefinition<number | null>,
  /** Longest one workspace command of the built-in driver may run, seconds (further bounded by the turn). */
  command_timeout_seconds: {
    credential: false, appliesTo: 'new_turns', schema: integer(1, 86_400), fallback: () => HOST_SETTING_DEFAULTS.command_timeout_seconds,
  } satisfies HostDefinition<number>,
  /** Output of one workspace command kept per stream (stdout, stderr), KiB. */
  command_output_max_kib: {
    credential: false, appliesTo: 'new_turns', schema: integer(1, 16_384), fallback: () => HOST_SETTING_DEFAULTS.command_output_max_kib,
  } satisfies HostDefinition<number>,
  /** Largest file the built-in driver's `read_file` reads, KiB. */
  file_read_max_kib: {
    credential: false, appliesTo: 'new_turns', schema: integer(1, 65_536), fallback: () => HOST_SETTING_DEFAULTS.file_read_max_kib,
  } satisfies HostDefinition<number>,
} as const;

export type HostSettingKey = keyof typeof HOST_SETTING_DEFINITIONS;
export const HOST_SETTING_KEYS = Object.keys(HOST_SETTING_DEFINITIONS) as HostSettingKey[];

/** The effective value of every host setting. */
export type HostSettingValues = { [K in HostSettingKey]: ReturnType<(typeof HOST_SETTING_DEFINITIONS)[K]['fallback']> };

/**
 * The limits one admitted turn runs under, decided once at admission from the host settings and
 * recorded on its attempt: the workflow's timeouts, the container a new sandbox gets, and what the
 * host's driver enforces all come from this one record.
 */
export interface TurnLimits {
  turnTimeLimitSeconds: number;
  /** Container caps of a sandbox this turn creates (an existing container keeps its own). */
  memoryBytes: number;
  nanoCpus: number;
  /** Process and open-file caps of a sandbox this turn creates (absent in attempts from before them: the host's defaults). */
  pids?: number;
  openFiles?: number;
  /** Disk size of a sandbox this turn creates, bytes (absent in attempts from before disks: the host's default). */
  diskBytes?: number;
  /** Largest checkout a sandbox this turn creates may clone, bytes. */
  repositoryMaxBytes: number;
  commandTimeoutSeconds: number;
  commandOutputMaxBytes: number;
  fileReadMaxBytes: number;
}

/** The turn limits of the current host settings. */
export function turnLimitsFrom(values: Pick<HostSettingValues, 'turn_time_limit_seconds' | 'container_memory_mib' | 'container_cpus'
  | 'container_pids' | 'container_open_files' | 'container_disk_gib' | 'repository_max_mib' | 'command_timeout_seconds' | 'command_output_max_kib'
  | 'file_read_max_kib'>): TurnLimits {
  return {
    turnTimeLimitSeconds: values.turn_time_limit_seconds,
    memoryBytes: values.container_memory_mib * MIB,
    nanoCpus: Math.round(values.container_cpus * 1e9),
    pids: values.container_pids,
    openFiles: values.container_open_files,
    diskBytes: values.container_disk_gib * GIB,
    repositoryMaxBytes: values.repository_max_mib * MIB,
    commandTimeoutSeconds: values.command_timeout_seconds,
    commandOutputMaxBytes: values.command_output_max_kib * KIB,
    fileReadMaxBytes: values.file_read_max_kib * KIB,
  };
}
