/**
 * Ending the sandbox group of a permanently deleted chat (docs/chat-deletion.md):
 * when the chat was the group's last member, the deletion sweep stops the group's container and
 * then deletes it, through the same operator actions an administrator uses (the group's workflow
 * `sandbox:<groupId>`, agent/sandboxes/sandbox-delivery.ts), with the review values read from the
 * group's row and the actor `system:user-deletion-sweeper` (so the actions' own audit rows name
 * the sweeper, category `deletion`). Only on a host that is online: a stale host leaves the
 * request to be tried again a minute later.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import type { SandboxAction, SandboxActionRequest, SandboxState } from '../../workflows/definitions/sandbox-group';
import { USER_DELETION_SWEEPER } from '../audit/audit-log';
import { systemRequestActor } from '../sandboxes/action-outcome';
import { sendSandboxAction, type SandboxDeliverySettings } from '../sandboxes/sandbox-delivery';

/**
 * The action that ends a stopped group for good (archived first when a bucket is
 * configured, discarded otherwise): `archive_delete` with an S3 bucket (the group ends `cold`,
 * its archive verified in the bucket), `delete` without one. The embedded `fs` store is not a
 * bucket: on it, deleted chats' sandboxes are discarded rather than kept on the API's disk.
 */
export function sandboxDeletionAction(bucketConfigured: boolean, state: 'stopped' | 'dead'): SandboxAction {
  // A dead group's container may be gone (the reconciler found it vanished): nothing to archive, only to delete.
  return bucketConfigured && state === 'stopped' ? 'archive_delete' : 'delete';
}

/** What the sandbox part of a deletion request does next. */
export type SandboxStep =
  /** Nothing to do: the group is gone from the records. */
  | { kind: 'none' }
  /** Other chats remain members: the group stays. */
  | { kind: 'kept'; members: number }
  | { kind: 'deleted' }
  /** Archived to object storage and its container removed (`cold`): nothing left on a host. */
  | { kind: 'archived' }
  /** No container was ever recorded for the group: there is nothing the host could stop. */
  | { kind: 'no_container' }
  /** An action is in progress on the group (this sweep's earlier one, or an operator's): wait for it. */
  | { kind: 'wait'; pendingAction: string }
  /** Send this action to the group's workflow. */
  | { kind: 'send'; action: SandboxAction; generation: number; containerId: string; lastActivityAt?: string }
  /** Not now (host offline, a state the sweep cannot end): the request is tried again later. */
  | { kind: 'retry'; reason: string };

interface GroupRow {
  state: SandboxState;
  pending_action: string | null;
  container_id: string | null;
  generation: number;
  last_activity_at: Date;
  host_stale: boolean;
  members: string;
}

/** Decides the next step for group `groupId` from its row (see {@link SandboxStep}). */
export async function nextSandboxStep(db: Db, input: { groupId: string; staleSeconds: number; bucketConfigured: boolean }): Promise<SandboxStep> {
  const row = await db('agent_sandboxes as s').join('agent_hosts as h', 'h.host_id', 's.host_id').where('s.group_id', input.groupId)
    .first<GroupRow | undefined>(
      's.state', 's.pending_action', 's.container_id', 's.generation', 's.last_activity_at',
      db.raw(`(h.last_heartbeat_at is null or h.last_heartbeat_at <= now() - make_interval(secs => ?) or h.removed_at is not null) as host_stale`, [input.staleSeconds]),
      db.raw('(select count(*) from agent_sandbox_members m where m.group_id = s.group_id) as members'),
    );
  if (!row) return { kind: 'none' };
  if (Number(row.members) > 0) return { kind: 'kept', members: Number(row.members) };
  if (row.state === 'deleted') return { kind: 'deleted' };
  if (row.state === 'cold') return { kind: 'archived' };
  if (row.pending_action !== null) return { kind: 'wait', pendingAction: row.pending_action };
  if (row.container_id === null) return { kind: 'no_container' };
  if (row.host_stale) return { kind: 'retry', reason: "The sandbox's host is offline (no heartbeat within the stale threshold); trying again later" };
  const review = { generation: row.generation, containerId: row.container_id };
  if (row.state === 'running') return { kind: 'send', action: 'stop', ...review, lastActivityAt: row.last_activity_at.toISOString() };
  if (row.state === 'stopped' || row.state === 'dead') return { kind: 'send', action: sandboxDeletionAction(input.bucketConfigured, row.state), ...review };
  return { kind: 'retry', reason: `The sandbox is ${row.state}; the sweep ends running, stopped or dead sandboxes only` };
}

/** The operator action of `step`, sent as the sweeper; answers the state the group is in now (409/503 throw AppError). */
export async function sendSweeperSandboxAction(
  deps: { db: Db; temporal: Client; settings: SandboxDeliverySettings }, groupId: string, step: Extract<SandboxStep, { kind: 'send' }>,
): Promise<SandboxState> {
  const request: SandboxActionRequest = {
    action: step.action, generation: step.generation, containerId: step.containerId, actor: systemRequestActor(USER_DELETION_SWEEPER),
    ...(step.lastActivityAt !== undefined ? { lastActivityAt: step.lastActivityAt } : {}),
  };
  return (await sendSandboxAction(deps, groupId, request)).state;
}

/**
 * Polls the group's row until no action is pending on it (every `pollMs`, calling `onPoll` each
 * time, e.g. an activity heartbeat), and answers its state; `timeout` after `timeoutMs`.
 */
export async function awaitSandboxSettled(db: Db, input: { groupId: string; timeoutMs: number; pollMs: number; onPoll?: () => void }): Promise<SandboxState | 'missing' | 'timeout'> {
  const deadline = Date.now() + input.timeoutMs;
  for (;;) {
    const row = await db('agent_sandboxes').where({ group_id: input.groupId }).first<{ state: SandboxState; pending_action: string | null } | undefined>('state', 'pending_action');
    if (!row) return 'missing';
    if (row.pending_action === null) return row.state;
    if (Date.now() > deadline) return 'timeout';
    input.onPoll?.();
    await new Promise((resolve) => setTimeout(resolve, input.pollMs));
  }
}
