/**
 * The recorded-history cases of the publisher (docs/workflow-replay.md, docs/publisher.md): a
 * completed turn's pending patch on a chat whose repository no forge of the deployment serves is
 * started through `PublishDelivery` (as the end of a turn starts it), and its `publish:<turnId>`
 * run records the failure for the owner (`publish_failed`, reason `unsupported_repo`).
 */
import type { publishWorkflow } from '../../workflows/publish';
import { publishWorkflowId } from '../../workflows/definitions/publish';
import { PublishDelivery } from '../../agent/source/publish-delivery';
import type { AgentStack } from './agent-stack';
import { createAttempt, createJob, createOwner, createTurn } from './agent-records';
import { activities, check, count, lastEventHas, type RecordedRun } from './history-case-steps';
import { captureLogs } from './logs';

/** A completed turn of a chat on `repo` whose host uploaded a non-empty patch (pending publication). */
export async function pendingPatch(
  stack: AgentStack, repo: string, capture: { baseSha: string; startTree: string; endTree: string; patch: Buffer } = { baseSha: 'c'.repeat(40), startTree: 'a'.repeat(40), endTree: 'b'.repeat(40), patch: Buffer.from('diff') },
): Promise<{ jobId: string; turnId: string; ownerId: number }> {
  const { userId } = await createOwner(stack.t.db);
  const jobId = await createJob(stack.t.db, userId);
  await stack.t.db('agent_jobs').where({ job_id: jobId }).update({ repo, base_sha: capture.baseSha });
  const turnId = await createTurn(stack.t.db, jobId, 1, 'completed');
  const attemptId = await createAttempt(stack.t.db, { jobId, turnId, hostId: stack.hostId, state: 'completed' });
  await stack.t.db('agent_turn_patches').insert({
    turn_id: turnId, attempt_id: attemptId, job_id: jobId, turn_seq: 1, capture_state: 'captured', start_tree: capture.startTree, end_tree: capture.endTree,
    bytes: capture.patch.length, patch: capture.patch, publish_state: 'pending',
  });
  return { jobId, turnId, ownerId: userId };
}

export async function publishUnsupportedRepo(stack: AgentStack): Promise<RecordedRun[]> {
  const { jobId, turnId, ownerId } = await pendingPatch(stack, 'https://forge.invalid/someone/unknown.git');
  const delivery = new PublishDelivery(stack.env.client, { TEMPORAL_CONTROL_TASK_QUEUE: stack.controlQueue, TEMPORAL_CALL_TIMEOUT_SECONDS: 10 }, captureLogs('publish-delivery').log);
  check(await delivery.start({ turnId, jobId, ownerId }), 'the publication started');
  const handle = stack.env.client.workflow.getHandle<typeof publishWorkflow>(publishWorkflowId(turnId));
  const outcome = await handle.result();
  check(outcome.kind === 'failed' && outcome.reason === 'unsupported_repo', `the publication failed: no forge (got ${JSON.stringify(outcome)})`);
  const row = await stack.t.db('agent_turn_patches').where({ turn_id: turnId }).first<{ publish_state: string }>('publish_state');
  check(row.publish_state === 'failed', 'the patch is recorded as failed');
  const history = await handle.fetchHistory();
  const scheduled = activities(history);
  check(count(scheduled, 'publishReadiness') === 1 && count(scheduled, 'pushTurnCommit') === 1 && count(scheduled, 'failPublication') === 1, 'ready, push refused once, failure recorded');
  check(lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'the run completed');
  return [{ name: 'publish-unsupported-repo', history }];
}
