/**
 * The host workflow's public surface (`host:<hostId>`; docs/agent-hosts.md
 * "The host workflow"): workflow type and id, input, the operator actions (one Update each, with a
 * validator), the heartbeat signal, the host states shown as the `AgentState` search attribute,
 * the slot-change judgement the workflow and the operator view share, and the failure types the
 * API maps to 404 / 409 / 503.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const HOST_WORKFLOW_TYPE = 'hostWorkflow';

/** Workflow id of an execution host: every change to the host runs there, one at a time. */
export function hostWorkflowId(hostId: string): string {
  return `host:${hostId}`;
}

/**
 * The host's state (search attribute `AgentState`): `enrolled` (never heartbeated), `online`
 * (a heartbeat within the stale threshold), `stale` (none for that long), `draining` (removal
 * requested: no new work; it is removed once nothing holds it), `removed` (the run ends).
 */
export type HostState = 'enrolled' | 'online' | 'stale' | 'draining' | 'removed';

/** A host as its workflow reads it in PostgreSQL; `found: false` for an unknown or removed host. */
export type HostObservation =
  | { found: false }
  | {
    found: true;
    /** Seconds since the last heartbeat by the database clock; null when it never beat. */
    heartbeatAgeSeconds: number | null;
    slotsSaved: number | null;
    slotsTotal: number | null;
    runnerVersion: string | null;
    /** ISO 8601; null when no removal is pending. */
    removalRequestedAt: string | null;
  };

/** A slot change the workflow follows until the runner confirms it. */
export interface PendingSlots {
  /** The saved number (null: the host default). */
  slots: number | null;
  /** What the runner must report to confirm it: the saved number, or `AGENT_HOST_SLOTS` for null. */
  target: number;
  /** The last status shown for it (memo), so each change of status is recorded once. */
  status: SlotChangeStatus;
}

/** A removal the workflow waits to finish. */
export interface Draining {
  /** ISO 8601, as PostgreSQL recorded it (`agent_hosts.removal_requested_at`). */
  requestedAt: string;
  /** What still held the host at the last check. */
  held: string[];
}

/** What a run hands to the next one when it continues as new. */
export interface HostCarried {
  state: HostState;
  pendingSlots?: PendingSlots;
  draining?: Draining;
}

export interface HostWorkflowInput {
  hostId: string;
  /** `AGENT_HOST_STALE_SECONDS`: no heartbeat for this long makes the host stale. */
  staleSeconds: number;
  /** `AGENT_HOST_SLOTS`: what a runner reports for the host default (`{slots: null}`). */
  defaultSlots: number;
  /** `AGENT_HOST_DRAIN_CHECK_SECONDS`: how often a draining host is checked for what still holds it. */
  drainCheckSeconds: number;
  /** Set by continue-as-new only. */
  carried?: HostCarried;
}

/** Who acts (mirrors the audit log's actor, agent/audit/audit-log.ts) and from where. */
export interface HostActionBy {
  actor: { type: 'user'; userId: number } | { type: 'admin_token' } | { type: 'system'; name: string };
  actorIp: string | null;
}

/** Operator actions on a host. */
export type HostAction = 'change_slots' | 'remove' | 'cancel_removal';

export interface ChangeSlotsRequest {
  /** 2..128, or null for the host's environment default. */
  slots: number | null;
  by: HostActionBy;
}

export interface ChangeSlotsAccepted {
  hostId: string;
  previous: number | null;
  slots: number | null;
}

export interface RemovalRequest {
  by: HostActionBy;
}

/** A removal's answer: removed at once, or draining until nothing holds the host. */
export type RemovalAnswer =
  | { hostId: string; state: 'removed'; tombstone: boolean }
  | { hostId: string; state: 'draining'; requestedAt: string; held: string[]; alreadyRequested: boolean };

export interface CancelRemovalAccepted {
  hostId: string;
  state: HostState;
}

export const changeSlotsUpdate = defineUpdate<ChangeSlotsAccepted, [ChangeSlotsRequest]>('changeSlots');
export const requestRemovalUpdate = defineUpdate<RemovalAnswer, [RemovalRequest]>('requestRemoval');
export const cancelRemovalUpdate = defineUpdate<CancelRemovalAccepted, [RemovalRequest]>('cancelRemoval');

/** What the API saw in a heartbeat that the workflow waits for (the workflow reads PostgreSQL itself). */
export interface HeartbeatNote {
  /** `online`: the host was not online before this beat; `slots`: its reported `slots_total` changed; `first`: this API process had not told the workflow about this host yet. */
  reason: 'online' | 'slots' | 'first';
  slotsTotal: number;
}

export const hostHeartbeatSignal = defineSignal<[HeartbeatNote]>('hostHeartbeat');

export interface HostWorkflowStatus {
  state: HostState;
  pendingSlots: PendingSlots | null;
  draining: Draining | null;
}

export const hostStatusQuery = defineQuery<HostWorkflowStatus>('hostStatus');

/** Failure types of a refused or failed action (the API: not found → 404, refused/conflict → 409, failed → 503). */
export const HostActionFailure = {
  notFound: 'HostNotFound',
  /** The action's condition does not hold in PostgreSQL (e.g. the host is being removed). */
  refused: 'HostActionRefused',
  /** The Update's validator refused it: another action in progress, or the host's state forbids it. */
  conflict: 'HostActionConflict',
  /** PostgreSQL did not answer in time. */
  failed: 'HostActionFailed',
} as const;

/** The first runner version that applies `slots_configured` from the heartbeat answer. */
export const REMOTE_SLOTS_RUNNER_VERSION = 2;

/** Whether a runner of this version applies remote slot changes (version 2 and later). */
export function appliesRemoteSlots(runnerVersion: string | null): boolean {
  const version = Number(runnerVersion);
  return Number.isInteger(version) && version >= REMOTE_SLOTS_RUNNER_VERSION;
}

/**
 * Where a slot change stands: `applied` (the runner reports the target), `not_applied` (the host
 * is not online, so nothing confirms it), `redeploy` (a runner older than version 2 never applies
 * it), `applying` (an online version-2 runner has not reported it yet).
 */
export type SlotChangeStatus = 'applying' | 'applied' | 'not_applied' | 'redeploy';

export function slotChangeStatus(options: { target: number; reported: number | null; online: boolean; runnerVersion: string | null }): SlotChangeStatus {
  if (options.reported === options.target) return 'applied';
  if (!options.online) return 'not_applied';
  if (!appliesRemoteSlots(options.runnerVersion)) return 'redeploy';
  return 'applying';
}
