/**
 * The operators' sandbox inventory (`GET /admin/agent/sandboxes`; docs/sandboxes.md "Inventory"):
 * one entry per sandbox group with what an operator reviews before an action (container id,
 * generation, last activity, state, the host's freshness, the chats it holds). Never secrets: no
 * environment, no credentials, no prompts. Hidden groups (removed from the inventory) appear only
 * with `all`.
 */
import type { Db } from '../../lib/db';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type { SandboxAction, SandboxState } from '../../workflows/definitions/sandbox-group';

/** A reading older than this is stale (90 s; the host reports every 30 s). */
export const OBSERVATION_STALE_SECONDS = 90;

/** Every sandbox group state (the `agent_sandboxes_state_check` constraint). */
export const INVENTORY_STATES = [
  'starting', 'running', 'stopped', 'cold', 'restoring', 'dead', 'stop_pending', 'deleting', 'deleted', 'archiving',
] as const satisfies readonly SandboxState[];

export interface SandboxEntry {
  group_id: string;
  host_id: string;
  host_stale: boolean;
  container_name: string;
  container_id: string | null;
  generation: number;
  state: SandboxState;
  /** The isolation the group's container runs under (docs/execution-profiles.md). */
  execution_profile: ExecutionProfile;
  pending_action: SandboxAction | null;
  hidden: boolean;
  hidden_reason: 'host_stale' | 'stopped' | null;
  native_resume_lost: boolean;
  last_activity_at: string;
  created_at: string;
  updated_at: string;
  running_turns: number;
  queued_turns: number;
  members: Array<{ job_id: string; owner_id: number }>;
  /** The latest report of the recorded container (docs/sandboxes.md "Reconciler"); null: never reported. */
  observed_at: string | null;
  /** Its Docker state then (`running`, `exited`, …). */
  observed_state: string | null;
  observed_cpu_percent: number | null;
  observed_memory_bytes: number | null;
  observed_disk_bytes: number | null;
  /** No reading, or the latest is older than {@link OBSERVATION_STALE_SECONDS}. */
  observation_stale: boolean;
}

interface Row {
  group_id: string; host_id: string; host_stale: boolean; container_name: string; container_id: string | null; generation: number;
  state: SandboxState; execution_profile: ExecutionProfile; pending_action: SandboxAction | null; hidden_at: Date | null; hidden_reason: 'host_stale' | 'stopped' | null;
  native_resume_lost_at: Date | null; last_activity_at: Date; created_at: Date; updated_at: Date;
  observed_at: Date | null; observed_state: string | null; observed_cpu_percent: number | null;
  observed_memory_bytes: string | null; observed_disk_bytes: string | null; observation_stale: boolean;
}

/** `state`: one state (hidden groups left out), or `all` (every state, hidden ones included). */
export async function listSandboxes(db: Db, input: { state: SandboxState | 'all'; staleSeconds: number; groupId?: string }): Promise<SandboxEntry[]> {
  const query = db('agent_sandboxes as s').join('agent_hosts as h', 'h.host_id', 's.host_id')
    .select<Row[]>(
      's.group_id', 's.host_id', 's.container_name', 's.container_id', 's.generation', 's.state', 's.execution_profile', 's.pending_action', 's.hidden_at',
      's.hidden_reason', 's.native_resume_lost_at', 's.last_activity_at', 's.created_at', 's.updated_at',
      's.observed_at', 's.observed_state', 's.observed_cpu_percent', 's.observed_memory_bytes', 's.observed_disk_bytes',
      db.raw(`(h.last_heartbeat_at is null or h.last_heartbeat_at <= now() - make_interval(secs => ?)) as host_stale`, [input.staleSeconds]),
      db.raw(`(s.observed_at is null or s.observed_at <= now() - make_interval(secs => ?)) as observation_stale`, [OBSERVATION_STALE_SECONDS]),
    )
    .orderBy('s.created_at').orderBy('s.group_id');
  if (input.state !== 'all') query.where('s.state', input.state).whereNull('s.hidden_at');
  if (input.groupId !== undefined) query.where('s.group_id', input.groupId);
  const rows = await query;
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.group_id);
  const members = await db('agent_sandbox_members as m').join('agent_jobs as j', 'j.job_id', 'm.job_id').whereIn('m.group_id', ids)
    .orderBy('m.created_at').select<Array<{ group_id: string; job_id: string; owner_id: string }>>('m.group_id', 'm.job_id', 'j.owner_id');
  const turns = await db('agent_turns as t').join('agent_sandbox_members as m', 'm.job_id', 't.job_id').whereIn('m.group_id', ids)
    .whereIn('t.state', ['running', 'queued']).groupBy('m.group_id', 't.state')
    .select<Array<{ group_id: string; state: string; count: string }>>('m.group_id', 't.state', db.raw('count(*) as count'));
  const turnCount = (groupId: string, state: string) => Number(turns.find((t) => t.group_id === groupId && t.state === state)?.count ?? 0);
  return rows.map((r) => ({
    group_id: r.group_id, host_id: r.host_id, host_stale: r.host_stale, container_name: r.container_name, container_id: r.container_id,
    generation: r.generation, state: r.state, execution_profile: r.execution_profile, pending_action: r.pending_action, hidden: r.hidden_at !== null, hidden_reason: r.hidden_reason,
    native_resume_lost: r.native_resume_lost_at !== null, last_activity_at: r.last_activity_at.toISOString(),
    created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
    running_turns: turnCount(r.group_id, 'running'), queued_turns: turnCount(r.group_id, 'queued'),
    members: members.filter((m) => m.group_id === r.group_id).map((m) => ({ job_id: m.job_id, owner_id: Number(m.owner_id) })),
    observed_at: r.observed_at?.toISOString() ?? null, observed_state: r.observed_state, observed_cpu_percent: r.observed_cpu_percent,
    observed_memory_bytes: r.observed_memory_bytes === null ? null : Number(r.observed_memory_bytes),
    observed_disk_bytes: r.observed_disk_bytes === null ? null : Number(r.observed_disk_bytes),
    observation_stale: r.observation_stale,
  }));
}

/** The owner of a group's first chat (the workflow's `AgentOwner`), with its host and profile; undefined for an unknown group. */
export async function sandboxGroupOf(db: Db, groupId: string): Promise<{ hostId: string; ownerId: number; executionProfile: ExecutionProfile } | undefined> {
  const row = await db('agent_sandboxes as s')
    .leftJoin('agent_sandbox_members as m', 'm.group_id', 's.group_id')
    .leftJoin('agent_jobs as j', 'j.job_id', 'm.job_id')
    .where('s.group_id', groupId).orderBy('m.created_at')
    .first<{ host_id: string; owner_id: string | null; execution_profile: ExecutionProfile } | undefined>('s.host_id', 'j.owner_id', 's.execution_profile');
  return row ? { hostId: row.host_id, ownerId: Number(row.owner_id ?? 0), executionProfile: row.execution_profile } : undefined;
}
