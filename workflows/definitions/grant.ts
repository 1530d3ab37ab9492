/**
 * The grant workflow's public surface (`grant:<grantId>`): workflow type and id, input, result and
 * the `release` signal, shared by the workflow, its parent (the chat workflow) and tests.
 */
import { defineSignal } from '@temporalio/workflow';

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const GRANT_WORKFLOW_TYPE = 'grantWorkflow';

/** Workflow id of one inference grant's renewal loop. */
export function grantWorkflowId(grantId: string): string {
  return `grant:${grantId}`;
}

export interface GrantWorkflowInput {
  grantId: string;
  attemptId: string;
  hostId: string;
  groupId: string | null;
  generation: number | null;
  renewEverySeconds: number;
}

export type GrantWorkflowResult = 'released' | 'residency_lost';

/** Ends the loop: the grant is revoked and the workflow completes with `released`. */
export const releaseGrantSignal = defineSignal('release');
