/**
 * The chat workflow's public surface (`chat:<jobId>`), shared by the workflow and its callers (the
 * API's chat delivery, the reconciler): workflow type and id, input, the `submitTurn` update, the
 * `wake` and `cancelTurn` signals, the `status` query and the failure types shown to owners.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { FailureType } from './failures';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const CHAT_WORKFLOW_TYPE = 'chatWorkflow';

/** Workflow id of a chat: its turns run in order there. */
export function chatWorkflowId(jobId: string): string {
  return `chat:${jobId}`;
}

export interface ChatConfig {
  /** The runner's execution timeout of one turn. */
  turnTimeLimitSeconds: number;
  /** A turn's host activity is presumed lost after missing heartbeats this long. */
  heartbeatTimeoutSeconds: number;
  /** Seconds between renewals of a turn's inference grant. */
  grantRenewSeconds: number;
  /** An idle chat workflow ends after this long without turns; the next turn starts a new run. */
  idleSeconds: number;
  /** Turns one workflow run handles before it continues as new (bounds the history). */
  turnsPerRun: number;
  /** Longest wait between the chat's own admission tries while its turn waits for a slot; absent in older inputs: 3 seconds. */
  admissionRetrySeconds?: number;
  /** Generate a better title for chats titled from their prompt (docs/agent-api.md "Titles"); absent in older inputs: off. */
  generateTitles?: boolean;
}

export interface ChatInput {
  jobId: string;
  ownerId: number;
  config: ChatConfig;
}

export interface SubmittedTurn {
  turnId: string;
  seq: number;
}

export interface SubmitResult {
  turn_id: string;
  seq: number;
  state: 'queued';
}

export interface ChatStatus {
  runningSeq: number | null;
  turnsRun: number;
}

export const submitTurnUpdate = defineUpdate<SubmitResult, [SubmittedTurn]>('submitTurn');
/**
 * Why a chat is woken. `recheck`: only look at PostgreSQL again when idle (the reconciler's wake of a
 * chat with an old queued turn); a wake without it (a host's claim admitted the turn, an owner
 * cancelled one, older senders) also interrupts an admission waiting for a slot, which asks again at once.
 */
export interface WakeInput {
  recheck?: boolean;
}

/** Wakes the workflow to look at PostgreSQL again (new or cancelled turns, a host's claim, reconciler). */
export const wakeSignal = defineSignal<[WakeInput?]>('wake');
/** Stops the running turn when its seq matches (the API has already recorded the request). */
export const cancelTurnSignal = defineSignal<[{ seq: number }]>('cancelTurn');
export const chatStatusQuery = defineQuery<ChatStatus>('status');

/**
 * Types of host-activity failures whose message is written for the chat's owner: one plain
 * sentence of this project's own (docs/agent-events.md "Turn errors"). Any other failure (a raw
 * Docker, network or programming error after retries) is shown as {@link unexplainedTurnFailure};
 * its text stays in the host runner's log and the workflow's history in the Temporal UI.
 */
export const OWNER_FACING_FAILURE_TYPES: readonly string[] = [
  FailureType.turnFailed, FailureType.turnTimeLimit, FailureType.attemptNotCurrent, FailureType.turnsNotConfigured,
  FailureType.modelUnavailable, FailureType.grantsNotConfigured, FailureType.grantUnavailable, FailureType.controlPlaneUnavailable,
  FailureType.imageMissing, FailureType.unsupportedRepo, FailureType.baseRevisionNotFound, FailureType.sandboxGenerationMismatch, FailureType.sandboxMissing,
  FailureType.archiveRestoreFailed, FailureType.repositoryTooLarge,
  FailureType.sandboxRuntimeMismatch, FailureType.sandboxRuntimeUnavailable, FailureType.sandboxDied, FailureType.sandboxDiskMissing,
];

/** The owner's message for a turn that failed for a reason not written for them. */
export function unexplainedTurnFailure(type: string | undefined): string {
  return `The turn failed on its execution host (${type ?? 'unknown error'}); an operator can find the details in the host runner's log`;
}
