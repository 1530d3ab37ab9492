/**
 * `title:<jobId>`: generates a chat's title once (docs/agent-api.md "Titles"). Started by
 * the chat workflow without waiting (parent close policy ABANDON, id reuse REJECT_DUPLICATE), so
 * it never delays turns and its failures never reach the chat. One activity does the work: it
 * makes up to five model calls within 120 s itself, so it is not retried.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { TitleActivities } from '../activities/control/title-activities';
import type { TitleOutcome, TitleWorkflowInput } from './definitions/title';

const { generateChatTitle } = proxyActivities<TitleActivities>({
  // 120 s of model calls, plus the grant issue and revoke and the final write.
  startToCloseTimeout: '180 seconds',
  retry: { maximumAttempts: 1 },
});

export async function titleWorkflow(input: TitleWorkflowInput): Promise<TitleOutcome> {
  return generateChatTitle({ jobId: input.jobId });
}
