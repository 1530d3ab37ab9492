/**
 * The publisher against a real forge (Gitea on loopback, PostgreSQL, the Temporal dev server;
 * docs/publisher.md): a completed turn's pending patch becomes a commit on `agent/<job id>` and one
 * draft pull request with exactly the turn's diff, shown to the owner as a `pull_request` event
 * and in the job view; a later turn adds its commit to the same pull request; a publication whose
 * start was lost is started by the reconciler; a retried publish
 * activity makes no second commit and opens no second pull request; the gate refuses a patch whose
 * start tree is not the branch's (a `publish_failed` event, nothing pushed); a title that cannot be
 * generated is logged as `agent_pr_title_generation_failed` and the prompt title is used.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createPublishActivities } from '../../../../activities/control/publish-activities';
import { createPrTitleGenerator } from '../../../../activities/control/pr-title';
import { GiteaForge } from '../../../../activities/forge/gitea-forge';
import { GatewayGrantClient } from '../../../../agent/grants/gateway-grant-client';
import { enrollHost } from '../../../../agent/hosts/host-registry';
import { titleFromPrompt } from '../../../../agent/jobs/titles';
import { PublishDelivery, reconcilePendingPublications } from '../../../../agent/source/publish-delivery';
import type { publishWorkflow } from '../../../../workflows/publish';
import { publishWorkflowId, type PublishOutcome } from '../../../../workflows/definitions/publish';
import { startTestApi, type TestApi } from '../../../support/api';
import { createAttempt, createJob, createOwner, createTurn } from '../../../support/agent-records';
import { freshDatabase, type TestDatabase } from '../../../support/db';
import { basicAuth, createGiteaRepo, createGiteaUser, giteaApi, listGiteaPulls, testGitea, type TestGitea } from '../../../support/gitea';
import { captureLogs } from '../../../support/logs';
import { temporalEnv, uniqueTaskQueue, workflowBundle } from '../../../support/temporal';

const FIRST_PROMPT = 'Add a greeting file\nwith a friendly line in it';

describe('publisher on a real forge (Gitea + PostgreSQL + Temporal)', function () {
  this.timeout(180_000);
  let t: TestDatabase;
  let gitea: TestGitea;
  let api: TestApi;
  let repo: { owner: string; name: string; cloneUrl: string };
  let work: string;
  let jobId: string;
  let owner: { userId: number; apiKey: string };
  let taskQueue: string;
  let worker: { worker: Worker; running: Promise<void> };
  const logs = captureLogs('publish-activities');
  let activities: ReturnType<typeof createPublishActivities>;
  let delivery: PublishDelivery;
  let seq = 0;

  const git = (args: string[], input?: string): string => execFileSync('git', args, {
    cwd: work, input, encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: ${basicAuth(gitea.admin.username, gitea.admin.password)}`, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.test', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.test' },
  }).trim();
  const snapshot = (): string => {
    git(['add', '-A']);
    return git(['write-tree']);
  };
  const pulls = () => listGiteaPulls(repo.owner, repo.name);
  const branch = () => `agent/${jobId}`;
  const remoteTip = (): string => git(['ls-remote', repo.cloneUrl, `refs/heads/${branch()}`]).split('\t')[0] ?? '';

  /** A completed turn whose host uploaded the diff `change` makes in the work clone (as the capture does). */
  async function completedTurn(change: () => void, options: { startTree?: string } = {}): Promise<string> {
    seq += 1;
    const startTree = options.startTree ?? snapshot();
    change();
    const endTree = snapshot();
    const patch = execFileSync('git', ['diff', '--binary', startTree, endTree], { cwd: work });
    const turnId = await createTurn(t.db, jobId, seq, 'completed');
    await t.db('agent_turns').where({ turn_id: turnId }).update({ prompt: seq === 1 ? FIRST_PROMPT : `Turn ${seq}` });
    const attemptId = await createAttempt(t.db, { jobId, turnId, hostId: 'host-publish', state: 'completed' });
    await t.db('agent_turn_patches').insert({
      turn_id: turnId, attempt_id: attemptId, job_id: jobId, turn_seq: seq, capture_state: 'captured',
      start_tree: startTree, end_tree: endTree, bytes: patch.length, patch, publish_state: 'pending',
    });
    return turnId;
  }

  async function publish(turnId: string): Promise<PublishOutcome> {
    assert.equal(await delivery.start({ turnId, jobId, ownerId: owner.userId }), true);
    return (await temporalEnv()).client.workflow.getHandle<typeof publishWorkflow>(publishWorkflowId(turnId)).result();
  }

  const events = (type: string) => t.db('agent_events').where({ job_id: jobId, event_type: type }).orderBy('event_id').select<Array<{ payload: Record<string, unknown>; turn_seq: number; is_error: boolean }>>('payload', 'turn_seq', 'is_error');

  before(async () => {
    t = await freshDatabase();
    gitea = await testGitea();
    const env = await temporalEnv();
    api = await startTestApi({ db: t.db });
    await enrollHost(t.db, 'host-publish');
    const person = await createGiteaUser();
    repo = await createGiteaRepo(person.username);
    work = mkdtempSync(join(tmpdir(), 'publisher-work-'));
    git(['clone', '-q', repo.cloneUrl, '.']);
    owner = await createOwner(t.db);
    jobId = await createJob(t.db, owner.userId);
    await t.db('agent_jobs').where({ job_id: jobId }).update({ repo: repo.cloneUrl, base_sha: git(['rev-parse', 'HEAD']), title: 'Greeting' });
    const forge = new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin });
    // A title generator whose gateway does not answer: generation fails, the prompt title is used.
    const generateTitle = createPrTitleGenerator({
      grants: new GatewayGrantClient({ gatewayUrl: 'http://127.0.0.1:9', dispatchToken: 'x'.repeat(40) }), gatewayUrl: () => 'http://127.0.0.1:9', log: logs.log,
    });
    activities = createPublishActivities({ db: t.db, log: logs.log, forgeFor: (r) => (forge.repoOf(r) ? forge : undefined), generateTitle });
    taskQueue = uniqueTaskQueue('publish');
    const made = await Worker.create({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue, workflowBundle: await workflowBundle(), activities });
    worker = { worker: made, running: made.run() };
    delivery = new PublishDelivery(env.client, { TEMPORAL_CONTROL_TASK_QUEUE: taskQueue, TEMPORAL_CALL_TIMEOUT_SECONDS: 10 }, logs.log);
  });
  after(async () => {
    worker?.worker.shutdown();
    await worker?.running;
    await api?.close();
    await t?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('publishes a turn as one draft pull request with exactly its diff, shown as an event and in the job view', async () => {
    const turnId = await completedTurn(() => writeFileSync(join(work, 'greeting.txt'), 'hello from the agent\n'));
    const outcome = await publish(turnId);
    assert.equal(outcome.kind, 'published', JSON.stringify(outcome));
    const [pr, ...more] = await pulls();
    assert.ok(pr);
    assert.equal(more.length, 0);
    assert.deepEqual([pr.draft, pr.state, pr.head.ref, pr.base.ref], [true, 'open', branch(), 'main']);
    assert.ok(pr.title.endsWith(titleFromPrompt(FIRST_PROMPT)), `the prompt title: ${pr.title}`);
    const files = await giteaApi<Array<{ filename: string; status: string; additions: number }>>('GET', `/repos/${repo.owner}/${repo.name}/pulls/${pr.number}/files`);
    assert.deepEqual(files.map((f) => [f.filename, f.status, f.additions]), [['greeting.txt', 'added', 1]]);
    const [event, ...others] = await events('pull_request');
    assert.equal(others.length, 0);
    assert.deepEqual(event?.payload, { url: pr.html_url, number: pr.number, branch: branch(), draft: true, commit_sha: remoteTip() });
    const view = await fetch(`${api.url}/v1/agent/jobs/${jobId}`, { headers: { authorization: `Bearer ${owner.apiKey}` } });
    assert.equal(view.status, 200);
    assert.deepEqual(((await view.json()) as { pull_request: unknown }).pull_request, { url: pr.html_url, number: pr.number, branch: branch(), draft: true });
    const failed = logs.lines.filter((l) => l.event === 'agent_pr_title_generation_failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.job_id, jobId);
    assert.doesNotMatch(JSON.stringify(failed[0]), /greeting|friendly/i, 'no prompt text in the log');
  });

  it('a retried publish makes no second commit and opens no second pull request', async () => {
    const [turn] = await t.db('agent_turn_patches').where({ job_id: jobId, turn_seq: 1 }).select<Array<{ turn_id: string }>>('turn_id');
    const turnId = turn!.turn_id;
    const tip = remoteTip();
    const [pr] = await pulls();
    const env = new MockActivityEnvironment();
    const again = await env.run((i: { turnId: string }) => activities.pushTurnCommit(i), { turnId });
    assert.deepEqual(again, { branch: branch(), commitSha: tip });
    const prAgain = await env.run<[{ turnId: string; branch: string }], { number: number }, (i: { turnId: string; branch: string }) => Promise<{ number: number }>>(
      (i) => activities.ensurePullRequest(i), { turnId, branch: branch() });
    assert.equal(prAgain.number, pr?.number);
    assert.equal(remoteTip(), tip);
    assert.equal((await pulls()).length, 1);
    // A second start of the workflow finds the turn published.
    await (await temporalEnv()).client.workflow.getHandle(publishWorkflowId(turnId)).result();
    assert.deepEqual(await publish(turnId), { kind: 'skipped', reason: 'already_published' });
    assert.equal((await events('pull_request')).length, 1);
  });

  it('a later turn adds its own commit to the same pull request', async () => {
    const turnId = await completedTurn(() => writeFileSync(join(work, 'second.txt'), 'turn two\n'));
    assert.equal((await publish(turnId)).kind, 'published');
    const all = await pulls();
    assert.equal(all.length, 1);
    const commits = await giteaApi<Array<{ sha: string; commit: { message: string } }>>('GET', `/repos/${repo.owner}/${repo.name}/pulls/${all[0]!.number}/commits`);
    assert.equal(commits.length, 2);
    assert.ok(commits.some((c) => c.commit.message.includes(`Agent-Turn: ${turnId}`)));
    git(['fetch', '-q', 'origin', branch()]);
    assert.equal(git(['diff', '--name-only', 'FETCH_HEAD^', 'FETCH_HEAD']), 'second.txt', 'the commit holds only the turn\'s own change');
    assert.equal((await events('pull_request')).length, 2);
  });

  it('a pending publication whose start was lost is started by the reconciler', async () => {
    const turnId = await completedTurn(() => writeFileSync(join(work, 'late.txt'), 'reconciled\n'));
    // Nothing started it (as if the control worker died between the turn's end and the start).
    assert.equal(await reconcilePendingPublications({ db: t.db, delivery, log: logs.log, minAgeSeconds: 0 }), 1);
    const outcome = await (await temporalEnv()).client.workflow.getHandle<typeof publishWorkflow>(publishWorkflowId(turnId)).result();
    assert.equal(outcome.kind, 'published');
    assert.equal((await pulls()).length, 1);
    assert.equal(await reconcilePendingPublications({ db: t.db, delivery, log: logs.log, minAgeSeconds: 0 }), 0, 'nothing is pending any more');
  });

  it('the gate refuses a patch whose start tree is not the branch\'s: nothing is pushed and the owner is told why', async () => {
    const tip = remoteTip();
    const baseTree = git(['rev-parse', 'origin/main^{tree}']);
    const turnId = await completedTurn(() => writeFileSync(join(work, 'third.txt'), 'turn three\n'), { startTree: baseTree });
    const outcome = await publish(turnId);
    assert.deepEqual(outcome, { kind: 'failed', reason: 'gate_refused' });
    assert.equal(remoteTip(), tip, 'the branch did not move');
    const [failure] = await events('publish_failed');
    assert.equal(failure?.is_error, true);
    assert.equal(failure?.payload.reason, 'gate_refused');
    assert.match(String(failure?.payload.message), /is not where the turn started/);
    const row = await t.db('agent_turn_patches').where({ turn_id: turnId }).first<{ publish_state: string }>('publish_state');
    assert.equal(row?.publish_state, 'failed');
  });
});
