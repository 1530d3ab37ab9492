/**
 * The sandbox group workflow's public surface (`sandbox:<groupId>`, docs/sandboxes.md
 * "Lifecycle"): workflow type and id, input, the operator actions (one Update each, with a
 * validator), their requests and answers, and the failure types the API maps to 409 / 503.
 */
import { defineUpdate } from '@temporalio/workflow';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const SANDBOX_GROUP_WORKFLOW_TYPE = 'sandboxGroupWorkflow';

/** Workflow id of a sandbox group: every operator action on the group runs there, one at a time. */
export function sandboxGroupWorkflowId(groupId: string): string {
  return `sandbox:${groupId}`;
}

export interface SandboxGroupInput {
  groupId: string;
  /** The group's host: its Docker work runs on `host:<hostId>`. */
  hostId: string;
  /** Owner of the group's first chat (search attribute `AgentOwner`). */
  ownerId: number;
  /** The workflow ends after this long without an action; the next action starts a new run. */
  idleSeconds: number;
}

/**
 * Lifecycle states of `agent_sandboxes.state` (the search attribute `AgentState` shows them). A stop
 * in progress is `stop_pending`; there is no failed state (docs/sandboxes.md "States").
 */
export type SandboxState =
  | 'starting' | 'running' | 'stopped' | 'cold' | 'restoring'
  | 'dead' | 'stop_pending' | 'deleting' | 'deleted' | 'archiving';

/** Operator actions on a sandbox group (docs/sandboxes.md "Lifecycle"; restoring a cold group is a turn's work, not an action). */
export type SandboxAction = 'stop' | 'delete' | 'force_delete' | 'archive_delete' | 'remove_from_inventory' | 'restore_to_inventory';

/** What the operator reviewed: the action is refused unless the group still matches it. */
export interface SandboxActionRequest {
  action: SandboxAction;
  generation: number;
  /** The reviewed container id (stop, delete, force delete). */
  containerId?: string;
  /** The reviewed last activity, ISO 8601 (stop). */
  lastActivityAt?: string;
  /** Who asked (operator principal), for the audit log. */
  actor: string;
  /** The operator's address as the API saw it, for the audit log. */
  actorIp?: string;
}

/** An accepted action: the state the group is in now (a pending state when the host still has work). */
export interface SandboxActionAccepted {
  groupId: string;
  action: SandboxAction;
  state: SandboxState;
  hidden: boolean;
}

export const stopIdleUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('stopIdle');
export const deleteWithoutArchiveUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('deleteWithoutArchive');
export const verifyStoppedAndForceDeleteUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('verifyStoppedAndForceDelete');
export const archiveAndDeleteUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('archiveAndDelete');
export const removeFromInventoryUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('removeFromInventory');
export const restoreToInventoryUpdate = defineUpdate<SandboxActionAccepted, [SandboxActionRequest]>('restoreToInventory');

/** The update of each action. */
export const SANDBOX_ACTION_UPDATES = {
  stop: stopIdleUpdate,
  delete: deleteWithoutArchiveUpdate,
  force_delete: verifyStoppedAndForceDeleteUpdate,
  archive_delete: archiveAndDeleteUpdate,
  remove_from_inventory: removeFromInventoryUpdate,
  restore_to_inventory: restoreToInventoryUpdate,
} as const;

/** Failure types of a refused or failed action (the API: refused → 409 with the message, failed → 503). */
export const SandboxActionFailure = {
  /** The action's condition does not hold, or another action is in progress: the message says which. */
  refused: 'SandboxActionRefused',
  /** The Update's validator refused it (another action in progress, a request for another action). */
  conflict: 'SandboxActionConflict',
  /** The action could not be carried out now (PostgreSQL or the host did not answer). */
  failed: 'SandboxActionFailed',
} as const;

/** How the host found the group's container (by name, compared with the expected id and generation). */
export type ContainerObservation =
  | { condition: 'running' | 'stopped' | 'dead'; containerId: string; generation: string | undefined }
  | { condition: 'missing' }
  | { condition: 'mismatch'; containerId: string; generation: string | undefined };

/** Result of removing a container that must not be running. */
export type ContainerRemoval = { removed: true } | { removed: false; observation: ContainerObservation };

/** Whether an observation shows exactly the recorded container (id and generation), stopped or dead. */
export function confirmsStopped(observation: ContainerObservation, containerId: string, generation: number): boolean {
  return (observation.condition === 'stopped' || observation.condition === 'dead')
    && observation.containerId === containerId && observation.generation === String(generation);
}

/** Words for what the host saw, for refusals and failures. */
export function describeObservation(observation: ContainerObservation): string {
  switch (observation.condition) {
    case 'missing': return 'the host has no container for this sandbox';
    case 'mismatch': return `the host's container is ${observation.containerId} at generation ${observation.generation ?? 'unknown'}, not the recorded one`;
    default: return `the host sees the container ${observation.condition}`;
  }
}

/** Object key of a group's archive at one generation: deterministic, so a retried upload can only meet its own object. */
export function sandboxArchiveKey(groupId: string, generation: number): string {
  return `sandbox-archives/${groupId}/g${generation}.tar`;
}

/** A committed archive: the object and the exact length and SHA-256 it was verified to have. */
export interface SandboxArchiveReceipt {
  key: string;
  length: number;
  sha256: string;
}

/** An archive spooled on the host, ready for its upload grant. */
export interface SpooledArchive {
  status: 'spooled';
  /** The spool file on the host (the upload reads it; same task queue, same host). */
  path: string;
  length: number;
  sha256: string;
}
