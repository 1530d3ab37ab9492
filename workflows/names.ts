/**
 * Names shared by workflows, workers, the API and the dev bootstrap: task queues and the
 * custom search attributes operators filter on in the Temporal UI.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Task queue of one execution host: its Docker work runs only there. */
export function hostTaskQueue(hostId: string): string {
  return `host:${hostId}`;
}

/** Custom search attributes (all Keyword), registered on the server by the dev bootstrap. */
export const searchAttributes = {
  owner: defineSearchAttributeKey('AgentOwner', SearchAttributeType.KEYWORD),
  host: defineSearchAttributeKey('AgentHost', SearchAttributeType.KEYWORD),
  state: defineSearchAttributeKey('AgentState', SearchAttributeType.KEYWORD),
} as const;

/** Workflow id of a chat: its turns run in order there. */
export function chatWorkflowId(jobId: string): string {
  return `chat:${jobId}`;
}

/** Workflow id of a chat's title generation (started once per chat by its chat workflow). */
export function titleWorkflowId(jobId: string): string {
  return `title:${jobId}`;
}

/** Workflow id of one inference grant's renewal loop. */
export function grantWorkflowId(grantId: string): string {
  return `grant:${grantId}`;
}

/** Workflow id of one workspace download (`requestId` makes concurrent downloads distinct). */
export function workspaceArchiveWorkflowId(jobId: string, requestId: string): string {
  return `workspace-archive:${jobId}:${requestId}`;
}
