/**
 * The title workflow's public surface (`title:<jobId>`): workflow type and id, input and outcome,
 * shared by the workflow, its activity and its parent (the chat workflow).
 */

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const TITLE_WORKFLOW_TYPE = 'titleWorkflow';

/** Workflow id of a chat's title generation (started once per chat by its chat workflow). */
export function titleWorkflowId(jobId: string): string {
  return `title:${jobId}`;
}

export interface TitleWorkflowInput {
  jobId: string;
}

/** What one title generation did (the workflow's result, visible in the Temporal UI). */
export type TitleOutcome =
  | { kind: 'generated'; title: string; calls: number }
  | { kind: 'skipped'; reason: 'job_missing' | 'not_prompt_title' | 'already_generated' | 'renamed' }
  | { kind: 'failed'; calls: number; reason: string };
