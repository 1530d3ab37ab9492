/**
 * Sends an operator action to its group's workflow: Update-with-Start of `sandbox:<groupId>` on
 * the control task queue (started when not running, `USE_EXISTING` otherwise), waiting for the
 * update's answer. A refusal (validator or condition) is a 409 with the workflow's reason; a
 * failure to check or an unreachable Temporal is a 503. Nothing is written here: the workflow's
 * activities write PostgreSQL.
 */
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError } from '../../lib/errors';
import type { Db } from '../../lib/db';
import type { Settings } from '../../lib/settings';
import { requireTemporal } from '../../lib/temporal';
import type { sandboxGroupWorkflow } from '../../workflows/sandbox-group';
import {
  SANDBOX_ACTION_UPDATES, SANDBOX_GROUP_WORKFLOW_TYPE, SandboxActionFailure, sandboxGroupWorkflowId,
  type SandboxActionAccepted, type SandboxActionRequest,
} from '../../workflows/definitions/sandbox-group';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { noteSandboxActionOutcome } from './action-outcome';
import { sandboxGroupOf } from './sandbox-inventory';

export type SandboxDeliverySettings = Pick<Settings, 'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS'>;

/** How long the operator waits for an action's answer (claim, and for deletions the host's observation). */
const ACTION_DEADLINE_MS = 90_000;

/** Tries of an action the validator refused while PostgreSQL shows nothing pending. */
const CONFLICT_RETRIES = 5;

const GROUP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

/**
 * Runs `request` on group `groupId`: 404 unknown group, 409 refused (with the reason), 503 when it
 * cannot be decided now. With `probeTemporalSeconds` (an operator waiting on HTTP), an unreachable
 * Temporal answers 503 within that many seconds instead of holding the request for the action's
 * long deadline; activities leave it out (their own retries cover an outage).
 */
export async function sendSandboxAction(
  deps: { db: Db; temporal: Client; settings: SandboxDeliverySettings; probeTemporalSeconds?: number }, groupId: string, request: SandboxActionRequest,
): Promise<SandboxActionAccepted> {
  const group = GROUP_ID.test(groupId) ? await sandboxGroupOf(deps.db, groupId) : undefined;
  if (!group) throw new AppError('not_found', `Sandbox group not found: ${groupId}`);
  if (deps.probeTemporalSeconds !== undefined) {
    await requireTemporal(deps.temporal, deps.probeTemporalSeconds, 'the sandbox action was not carried out and nothing changed');
  }
  // A with-start operation is used once: each try builds its own.
  const start = () => new WithStartWorkflowOperation<typeof sandboxGroupWorkflow>(SANDBOX_GROUP_WORKFLOW_TYPE, {
    workflowId: sandboxGroupWorkflowId(groupId),
    taskQueue: deps.settings.TEMPORAL_CONTROL_TASK_QUEUE,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ groupId, hostId: group.hostId, ownerId: group.ownerId, idleSeconds: deps.settings.AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS }],
    typedSearchAttributes: [
      { key: searchAttributes.host, value: group.hostId },
      { key: searchAttributes.owner, value: String(group.ownerId) },
      { key: searchAttributes.profile, value: group.executionProfile },
    ],
    memo: { groupId, host: group.hostId, owner: group.ownerId, profile: group.executionProfile },
  });
  const execute = () => deps.temporal.connection.withDeadline(Date.now() + ACTION_DEADLINE_MS, () =>
    deps.temporal.workflow.executeUpdateWithStart(SANDBOX_ACTION_UPDATES[request.action], { args: [request], startWorkflowOperation: start() }));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await execute();
    } catch (err) {
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === SandboxActionFailure.conflict) {
        // The workflow learns that its action finished one workflow task after PostgreSQL records it:
        // an action that PostgreSQL no longer holds pending is not a conflict, so ask again shortly.
        if (attempt < CONFLICT_RETRIES && !(await actionPending(deps.db, groupId))) {
          await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
          continue;
        }
        // A validator's refusal never reaches an activity: its outcome is noted here (a claim notes its own).
        await noteSandboxActionOutcome(deps.db, { groupId, request, outcome: 'refused', reason: cause.message });
        throw new AppError('conflict', cause.message, { cause: err });
      }
      if (cause instanceof ApplicationFailure && cause.type === SandboxActionFailure.refused) throw new AppError('conflict', cause.message, { cause: err });
      const reason = cause instanceof ApplicationFailure ? cause.message : 'the sandbox workflow did not answer in time';
      throw new AppError('service_unavailable', `The action could not be carried out now: ${reason}`, { cause: err });
    }
  }
}

/** Whether PostgreSQL records an operator action in progress on the group. */
async function actionPending(db: Db, groupId: string): Promise<boolean> {
  const row = await db('agent_sandboxes').where({ group_id: groupId }).first<{ pending_action: string | null } | undefined>('pending_action');
  return row?.pending_action !== null && row?.pending_action !== undefined;
}
