/**
 * Control-queue activities of the deletion sweep (`workflows/deletion-sweep.ts`): thin Temporal
 * adapters over agent/deletion/. The request activities are one transaction each and fenced by the
 * claim's attempt number, so a retried or late call changes nothing it should not. Sending a
 * sandbox action goes through the operators' delivery (update-with-start of `sandbox:<groupId>`);
 * its refusal or failure is an ordinary error here: the sweep fails the attempt and tries the
 * request again a minute later.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { Settings } from '../../lib/settings';
import {
  claimDueDeletion, failDeletion, finishDeletion, purgeDeletedChat, type ClaimedDeletion, type PurgeResult, type SandboxEnding,
} from '../../agent/deletion/deletion-requests';
import { awaitSandboxSettled, nextSandboxStep, sendSweeperSandboxAction, type SandboxStep } from '../../agent/deletion/sandbox-ending';
import type { SandboxState } from '../../workflows/definitions/sandbox-group';

export type { ClaimedDeletion, PurgeResult, SandboxEnding, SandboxStep };

export interface DeletionActivityDeps {
  db: Db;
  /** Sends the sandbox actions (absent: the sandbox part of every request fails and is retried). */
  temporal?: Client;
  settings: Pick<Settings, 'AGENT_HOST_STALE_SECONDS' | 'OBJECT_STORE_BACKEND' | 'TEMPORAL_CONTROL_TASK_QUEUE' | 'AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS'>;
}

/** How often the settle wait reads the group row (and heartbeats). */
const SETTLE_POLL_MS = 1000;

export function createDeletionActivities(deps: DeletionActivityDeps) {
  const { db, settings } = deps;
  return {
    /** The next due request under a new lease, or null. */
    async claimDueDeletion(input: { leaseSeconds: number }): Promise<ClaimedDeletion | null> {
      return (await claimDueDeletion(db, input)) ?? null;
    },

    /** Deletes the chat's records (or says why not now). */
    async purgeDeletedChat(input: ClaimedDeletion): Promise<PurgeResult> {
      return purgeDeletedChat(db, input);
    },

    /** What the sandbox part does next. The deletion action depends on whether a bucket is configured. */
    async nextSandboxStep(input: { groupId: string }): Promise<SandboxStep> {
      return nextSandboxStep(db, { groupId: input.groupId, staleSeconds: settings.AGENT_HOST_STALE_SECONDS, bucketConfigured: settings.OBJECT_STORE_BACKEND === 's3' });
    },

    /** Sends a stop or deletion as the sweeper; a refusal (409) or an unanswered action (503) fails without retry here. */
    async sendSweeperSandboxAction(input: { groupId: string; step: Extract<SandboxStep, { kind: 'send' }> }): Promise<SandboxState> {
      if (!deps.temporal) throw ApplicationFailure.nonRetryable('The control worker has no Temporal client to send sandbox actions with', 'SandboxActionFailed');
      try {
        return await sendSweeperSandboxAction({ db, temporal: deps.temporal, settings }, input.groupId, input.step);
      } catch (err) {
        if (err instanceof AppError) throw ApplicationFailure.nonRetryable(`${input.step.action}: ${err.message}`, 'SandboxActionFailed');
        throw err;
      }
    },

    /** Waits (heartbeating) until no action is pending on the group; its state, `missing`, or `timeout`. */
    async awaitSandboxSettled(input: { groupId: string; timeoutSeconds: number }): Promise<SandboxState | 'missing' | 'timeout'> {
      return awaitSandboxSettled(db, {
        groupId: input.groupId, timeoutMs: input.timeoutSeconds * 1000, pollMs: SETTLE_POLL_MS, onPoll: () => Context.current().heartbeat(),
      });
    },

    async finishDeletion(input: ClaimedDeletion & { sandbox: SandboxEnding }): Promise<boolean> {
      return finishDeletion(db, input);
    },

    async failDeletion(input: ClaimedDeletion & { error: string; retrySeconds: number }): Promise<boolean> {
      return failDeletion(db, input);
    },
  };
}

export type DeletionActivities = ReturnType<typeof createDeletionActivities>;
