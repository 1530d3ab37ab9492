/**
 * The recorded-history cases of the publisher (docs/workflow-replay.md, docs/publisher.md): a
 * completed turn's pending patch on a chat whose repository no forge of the deployment serves is
 * started through `PublishDelivery` (as the end of a turn starts it), and its `publish:<turnId>`
 * run records the failure for the owner (`publish_failed`, reason `unsupported_repo`); and a turn
 * of a chat on a Gitea repository is pushed and opens a draft pull request.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { createPublishActivities } from '../../activities/control/publish-activities';
import { GiteaForge } from '../../activities/forge/gitea-forge';
import type { publishWorkflow } from '../../workflows/publish';
import { publishWorkflowId } from '../../workflows/definitions/publish';
import { PublishDelivery } from '../../agent/source/publish-delivery';
import type { AgentStack } from './agent-stack';
import { createAttempt, createJob, createOwner, createTurn } from './agent-records';
import { activities, check, count, lastEventHas, type RecordedRun } from './history-case-steps';
import { captureLogs } from './logs';
import { basicAuth, createGiteaRepo, createGiteaUser, testGitea } from './gitea';
import { uniqueTaskQueue, workflowBundle } from './temporal';

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

/** A published turn on Gitea: the push and a new draft pull request, then the settle (its own worker, with the forge). */
export async function publishDraftPullRequest(stack: AgentStack): Promise<RecordedRun[]> {
  const gitea = await testGitea();
  const person = await createGiteaUser();
  const repo = await createGiteaRepo(person.username);
  const work = mkdtempSync(join(tmpdir(), 'publish-history-'));
  const header = `Authorization: ${basicAuth(gitea.admin.username, gitea.admin.password)}`;
  const git = (args: string[]) => execFileSync('git', args, {
    cwd: work, encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: header },
  }).trim();
  const taskQueue = uniqueTaskQueue('publish-history');
  const forge = new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin });
  const worker = await Worker.create({
    connection: stack.env.nativeConnection, namespace: stack.env.namespace ?? 'default', taskQueue, workflowBundle: await workflowBundle(),
    activities: createPublishActivities({ db: stack.t.db, log: captureLogs('publish-history').log, forgeFor: (r) => (forge.repoOf(r) ? forge : undefined) }),
  });
  const running = worker.run();
  try {
    git(['clone', '-q', repo.cloneUrl, '.']);
    const base = git(['rev-parse', 'HEAD']);
    const startTree = git(['rev-parse', 'HEAD^{tree}']);
    writeFileSync(join(work, 'history.txt'), 'recorded\n');
    git(['add', '-A']);
    const endTree = git(['write-tree']);
    const patch = execFileSync('git', ['diff', '--binary', startTree, endTree], { cwd: work });
    const { jobId, turnId, ownerId } = await pendingPatch(stack, repo.cloneUrl, { baseSha: base, startTree, endTree, patch });
    const delivery = new PublishDelivery(stack.env.client, { TEMPORAL_CONTROL_TASK_QUEUE: taskQueue, TEMPORAL_CALL_TIMEOUT_SECONDS: 10 }, captureLogs('publish-delivery').log);
    check(await delivery.start({ turnId, jobId, ownerId }), 'the publication started');
    const handle = stack.env.client.workflow.getHandle<typeof publishWorkflow>(publishWorkflowId(turnId));
    const outcome = await handle.result();
    check(outcome.kind === 'published', `the turn was published (got ${JSON.stringify(outcome)})`);
    const history = await handle.fetchHistory();
    const scheduled = activities(history);
    check(['publishReadiness', 'pushTurnCommit', 'ensurePullRequest', 'completePublication'].every((a) => count(scheduled, a) === 1), 'ready, pushed, pull request opened, settled');
    check(lastEventHas(history, 'workflowExecutionCompletedEventAttributes'), 'the run completed');
    return [{ name: 'publish-draft-pull-request', history }];
  } finally {
    worker.shutdown();
    await running;
    rmSync(work, { recursive: true, force: true });
  }
}
