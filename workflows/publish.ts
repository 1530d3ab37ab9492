/**
 * `publish:<turnId>`: turns one completed turn's captured diff into a commit on the chat's branch
 * and the chat's draft pull request (docs/publisher.md "Publish"). Started after the turn completed
 * with a non-empty patch (and again by the reconciler while the patch is still pending; the id
 * makes that the same workflow). Turns of one chat publish in order: while an earlier turn is still
 * pending the workflow waits. Every activity is idempotent (the commit carries the turn's trailer,
 * the pull request is found by its branch before one is opened, the settle is guarded by the
 * pending state), so retries never commit twice or open a second pull request. A failure is
 * recorded for the owner as a `publish_failed` event.
 */
import { ApplicationFailure, proxyActivities, sleep, ActivityFailure } from '@temporalio/workflow';
import type { PublishActivities } from '../activities/control/publish-activities';
import {
  EARLIER_PUBLISH_POLL_SECONDS, EARLIER_PUBLISH_WAIT_SECONDS, PublishFailureType, type PublishOutcome, type PublishWorkflowInput,
} from './definitions/publish';

const NON_RETRYABLE = [PublishFailureType.gateRefused, PublishFailureType.unsupportedRepo, PublishFailureType.forgeRefused];

/** Reads and settles PostgreSQL state. */
const state = proxyActivities<PublishActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Talks to the forge (git and its API): retried for about ten minutes, then the failure is the owner's to see. */
const forge = proxyActivities<PublishActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 12, nonRetryableErrorTypes: NON_RETRYABLE },
});

/** The owner-facing reason of a failed forge activity. */
function failureOf(err: unknown): { reason: 'gate_refused' | 'unsupported_repo' | 'forge_error'; message: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const message = cause instanceof Error && cause.message ? cause.message : 'The forge did not answer';
  const type = cause instanceof ApplicationFailure ? cause.type : undefined;
  if (type === PublishFailureType.gateRefused) return { reason: 'gate_refused', message };
  if (type === PublishFailureType.unsupportedRepo) return { reason: 'unsupported_repo', message };
  if (type === PublishFailureType.forgeRefused) return { reason: 'forge_error', message: `The forge refused to publish the turn: ${message}` };
  return { reason: 'forge_error', message: `Publishing the turn failed: ${message}` };
}

export async function publishWorkflow(input: PublishWorkflowInput): Promise<PublishOutcome> {
  const { turnId } = input;
  for (let waited = 0; ; waited += EARLIER_PUBLISH_POLL_SECONDS) {
    const ready = await state.publishReadiness({ turnId });
    if (ready.kind === 'skip') return { kind: 'skipped', reason: ready.reason };
    if (ready.kind === 'ready') break;
    if (waited >= EARLIER_PUBLISH_WAIT_SECONDS) {
      await state.failPublication({ turnId, reason: 'forge_error', message: 'An earlier turn of this chat was not published within an hour, so this one was not either' });
      return { kind: 'failed', reason: 'earlier_turn_pending' };
    }
    await sleep(`${EARLIER_PUBLISH_POLL_SECONDS} seconds`);
  }
  try {
    const commit = await forge.pushTurnCommit({ turnId });
    const pullRequest = await forge.ensurePullRequest({ turnId, branch: commit.branch });
    await state.completePublication({ turnId, branch: commit.branch, commitSha: commit.commitSha, pullRequest });
    return { kind: 'published', commitSha: commit.commitSha, pullRequest: pullRequest.number };
  } catch (err) {
    const failure = failureOf(err);
    await state.failPublication({ turnId, ...failure });
    return { kind: 'failed', reason: failure.reason };
  }
}
