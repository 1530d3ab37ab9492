/**
 * The publish workflow's public surface (`publish:<turnId>`; docs/publisher.md "Publish"): type
 * and id, input and outcome, failure types. The id is the turn's, so a second start (the turn's
 * end, then the reconciler) joins the same workflow instead of publishing twice.
 */

/** Workflow type name registered by the control worker (the export name in `workflows/index.ts`). */
export const PUBLISH_WORKFLOW_TYPE = 'publishWorkflow';

/** Workflow id of the publication of one turn's patch. */
export function publishWorkflowId(turnId: string): string {
  return `publish:${turnId}`;
}

export interface PublishWorkflowInput {
  turnId: string;
}

/** What one publication did (the workflow's result, visible in the Temporal UI). */
export type PublishOutcome =
  | { kind: 'published'; commitSha: string; pullRequest: number }
  | { kind: 'skipped'; reason: string }
  | { kind: 'failed'; reason: string };

/** Non-retryable failure types of the publish activities: the failure is recorded for the owner at once. */
export const PublishFailureType = {
  gateRefused: 'PatchGateRefused',
  unsupportedRepo: 'PublishUnsupportedRepo',
  /** The forge refused (credential, repository, branch) or answered badly: retrying would not help. */
  forgeRefused: 'PublishForgeRefused',
} as const;

/** How long a turn waits for an earlier turn of its chat to be published, in seconds, before it fails. */
export const EARLIER_PUBLISH_WAIT_SECONDS = 3600;
/** Pause between looks at an earlier turn's publication, in seconds. */
export const EARLIER_PUBLISH_POLL_SECONDS = 10;
