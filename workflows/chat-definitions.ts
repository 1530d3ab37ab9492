/**
 * The chat workflow's public surface, shared by the workflow and its callers (API, reconciler):
 * input, the `submitTurn` update, the `wake` and `cancelTurn` signals and the `status` query.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Workflow type name registered by the control worker. */
export const CHAT_WORKFLOW_TYPE = 'chatWorkflow';

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
  /** Generate a better title for chats titled from their prompt (spec 8); absent in older inputs: off. */
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
/** Wakes the workflow to look at PostgreSQL again (new or cancelled turns, reconciler). */
export const wakeSignal = defineSignal('wake');
/** Stops the running turn when its seq matches (the API has already recorded the request). */
export const cancelTurnSignal = defineSignal<[{ seq: number }]>('cancelTurn');
export const chatStatusQuery = defineQuery<ChatStatus>('status');
