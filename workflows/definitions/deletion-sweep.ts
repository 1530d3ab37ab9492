/**
 * The deletion sweep's public surface (docs/chat-deletion.md): workflow type,
 * the Temporal Schedule that starts it every minute (overlap SKIP), its input and its result.
 */

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const DELETION_SWEEP_WORKFLOW_TYPE = 'deletionSweepWorkflow';

/** The deleted-chat sweep runs each minute. */
export const DELETION_SWEEP_INTERVAL = '1 minute';

export interface DeletionSweepInput {
  /** How long a claimed request is held before another sweep may take it again (a dead sweep's). */
  leaseSeconds: number;
  /** A failed attempt is retried a minute later. */
  retrySeconds: number;
  /** Requests handled (one at a time) by one run at most; the rest wait for the next minute. */
  maxRequests: number;
  /** How long one sandbox action (stop, delete) may take before the attempt fails. */
  sandboxSettleSeconds: number;
}

/** The input the Schedule starts each run with. */
export const DELETION_SWEEP_DEFAULTS: DeletionSweepInput = {
  leaseSeconds: 30 * 60,
  retrySeconds: 60,
  maxRequests: 10,
  sandboxSettleSeconds: 5 * 60,
};

/** What one run did: requests finished (`done`) and attempts that failed (retried later). */
export interface DeletionSweepResult {
  done: string[];
  failed: string[];
}
