/**
 * The host self-check workflow's public surface (`host-self-check:<hostId>`): workflow type and
 * id, input, result and its permanent failure type. Operators start it from the Temporal UI or CLI.
 */
import { FailureType } from './failures';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const HOST_SELF_CHECK_WORKFLOW_TYPE = 'hostSelfCheck';

/** Workflow id of a self-check of one host. */
export function hostSelfCheckWorkflowId(hostId: string): string {
  return `host-self-check:${hostId}`;
}

export interface HostSelfCheckInput {
  hostId: string;
}

export interface HostSelfCheckResult {
  hostId: string;
  ok: boolean;
  exitCode: number;
  /** Lines the sandbox printed: `uid=…`, `debian=…`, `git=…`, `python=…`. */
  report: Record<string, string>;
  stderr: string;
}

/** The sandbox command's failure types that retrying cannot fix. */
export const HOST_SELF_CHECK_PERMANENT_FAILURES: readonly FailureType[] = [FailureType.imageMissing];
