/**
 * The idle stop's public surface (host setting `idle_timeout_seconds`; docs/sandboxes.md "Idle
 * stop"): workflow type, the Temporal Schedule that starts it every minute (overlap SKIP), its
 * input and its result.
 */
import type { SandboxState } from './sandbox-group';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const IDLE_SANDBOX_STOP_WORKFLOW_TYPE = 'idleSandboxStopWorkflow';

/** How often the Schedule looks for idle sandboxes: an idle timeout is kept to within a minute. */
export const IDLE_SANDBOX_STOP_INTERVAL = '1 minute';

export interface IdleSandboxStopInput {
  /** Stops one run requests at most (one at a time); the rest wait for the next minute. */
  maxGroups: number;
}

/** The input the Schedule starts each run with. */
export const IDLE_SANDBOX_STOP_DEFAULTS: IdleSandboxStopInput = { maxGroups: 20 };

/** A running, idle group as the run found it: what its stop is reviewed against. */
export interface IdleSandbox {
  groupId: string;
  generation: number;
  containerId: string;
  /** ISO 8601, to the millisecond (the stop is refused if the group was active since). */
  lastActivityAt: string;
}

/** What became of one stop request: accepted (the group is `stop_pending` or already further), refused (its condition failed), or failed (not decided now). */
export type IdleStopOutcome =
  | { kind: 'accepted'; state: SandboxState }
  | { kind: 'refused'; reason: string }
  | { kind: 'failed'; reason: string };

/** What one run did. `idleTimeoutSeconds` null: the setting is "never", nothing was looked for. */
export interface IdleSandboxStopResult {
  idleTimeoutSeconds: number | null;
  /** Groups whose stop was accepted. */
  stopped: string[];
  refused: Array<{ groupId: string; reason: string }>;
  failed: Array<{ groupId: string; reason: string }>;
}
