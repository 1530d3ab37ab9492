/**
 * End to end (PostgreSQL, Temporal, Docker, the gateway with a fake LLM upstream, Gitea;
 * docs/publisher.md): a chat on a Gitea repository whose turn writes a file ends with a draft pull
 * request holding exactly that diff, and the owner sees its link in the job view and as a
 * `pull_request` event; its next turn adds one commit holding only that turn's change (not the
 * first turn's file, not an ignored one) to the same pull request. The host clones the repository from Gitea's own copy on disk over
 * `file://` (the host's clone accepts `https://` and `file://`; Gitea here serves plain HTTP on
 * loopback), and the publisher reaches Gitea over HTTP with the repository's write token.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GiteaForge } from '../../activities/forge/gitea-forge';
import type { Forge } from '../../activities/forge/forge';
import { titleFromPrompt } from '../../agent/jobs/titles';
import { AGENT_MODEL, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { basicAuth, createGiteaRepo, createGiteaUser, giteaApi, listGiteaPulls, testGitea } from '../support/gitea';
import { waitFor } from '../support/wait';

const PROMPT = 'Add a greeting file\nso visitors feel welcome';

describe('publishing a chat\'s turn as a draft pull request (end to end, Gitea)', function () {
  this.timeout(240_000);
  let stack: AgentStack;
  let repo: { owner: string; name: string; cloneUrl: string };
  let fileUrl: string;

  before(async () => {
    const gitea = await testGitea();
    const person = await createGiteaUser();
    repo = await createGiteaRepo(person.username);
    const onDisk = join(gitea.workDir, 'repositories', repo.owner.toLowerCase(), `${repo.name.toLowerCase()}.git`);
    assert.ok(existsSync(onDisk), onDisk);
    fileUrl = `file://${onDisk}`;
    const forge = new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin });
    // The job names Gitea's copy on disk; everything the publisher does goes to Gitea itself.
    const forgeFor = (r: string): Forge | undefined => (r !== fileUrl ? undefined : {
      kind: forge.kind, repoOf: () => ({ owner: repo.owner, name: repo.name }), gitUrl: (x) => forge.gitUrl(x), gitAuthHeader: (x) => forge.gitAuthHeader(x),
      cloneToken: (x) => forge.cloneToken(x), repoToken: (x) => forge.repoToken(x), defaultBranch: (x) => forge.defaultBranch(x),
      findPullRequest: (x, head) => forge.findPullRequest(x, head), openDraftPullRequest: (x, input) => forge.openDraftPullRequest(x, input),
    });
    stack = await startAgentStack({ env: { AGENT_REPO_ALLOWLIST: fileUrl }, forgeFor });
  });
  after(async () => {
    await stack?.close();
  });

  it('a turn that writes a file ends with a draft pull request of exactly that diff, linked in the job view and the event log', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'write_file', arguments: { path: 'greeting.txt', content: 'Welcome, visitor!\n' } },
      { kind: 'json', content: 'Added greeting.txt' },
    );
    const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: PROMPT, model: AGENT_MODEL, repo: fileUrl, base_ref: 'main' });
    assert.equal(created.status, 201, await created.clone().text());
    const jobId = ((await created.json()) as { job_id: string }).job_id;
    type View = { turns: Array<{ state: string; error?: string }>; pull_request: { url: string; number: number; branch: string; draft: boolean } | null };
    const view = await waitFor(async () => {
      const v = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as View;
      if (v.turns[0]?.state === 'failed') throw new Error(`the turn failed: ${v.turns[0].error ?? ''}`);
      return v.pull_request ? v : undefined;
    }, 'the chat\'s pull request in its job view', 180_000);
    assert.equal(view.turns[0]?.state, 'completed');

    const [pr, ...more] = await listGiteaPulls(repo.owner, repo.name);
    assert.ok(pr);
    assert.equal(more.length, 0, 'one pull request');
    assert.deepEqual(view.pull_request, { url: pr.html_url, number: pr.number, branch: `agent/${jobId}`, draft: true });
    assert.deepEqual([pr.draft, pr.head.ref, pr.base.ref], [true, `agent/${jobId}`, 'main']);
    assert.ok(pr.title.endsWith(titleFromPrompt(PROMPT)), pr.title);
    const files = await giteaApi<Array<{ filename: string; status: string; additions: number; deletions: number }>>('GET', `/repos/${repo.owner}/${repo.name}/pulls/${pr.number}/files`);
    assert.deepEqual(files.map((f) => [f.filename, f.status, f.additions, f.deletions]), [['greeting.txt', 'added', 1, 0]]);
    const gitea = await testGitea();
    const diff = await fetch(`${gitea.url}/api/v1/repos/${repo.owner}/${repo.name}/pulls/${pr.number}.diff`, { headers: { authorization: basicAuth(gitea.admin.username, gitea.admin.password) } });
    assert.equal(diff.status, 200);
    const text = await diff.text();
    assert.deepEqual([...text.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]), ['greeting.txt']);
    assert.match(text, /^\+Welcome, visitor!$/m);

    const events = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'pull_request' }).select<Array<{ payload: { url: string; number: number; branch: string; draft: boolean } }>>('payload');
    assert.equal(events.length, 1);
    assert.deepEqual([events[0]?.payload.url, events[0]?.payload.number, events[0]?.payload.branch, events[0]?.payload.draft], [pr.html_url, pr.number, `agent/${jobId}`, true]);
    const patch = await stack.t.db('agent_turn_patches').where({ job_id: jobId }).first<{ capture_state: string; publish_state: string }>('capture_state', 'publish_state');
    assert.deepEqual(patch, { capture_state: 'captured', publish_state: 'published' });
  });

  it('the chat\'s next turn adds one commit with only its own change to the same pull request', async () => {
    const jobId = await stack.t.db('agent_jobs').where({ repo: fileUrl }).first<{ job_id: string }>('job_id').then((r) => r.job_id);
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'echo "Enjoy your stay." >> greeting.txt && echo scratch > notes.log && printf "*.log\\n" > .gitignore' } },
      { kind: 'json', content: 'Extended the greeting' },
    );
    const added = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'Extend the greeting' });
    assert.equal(added.status, 201, await added.clone().text());
    const turn2 = await waitFor(async () => {
      const row = await stack.t.db('agent_turn_patches').where({ job_id: jobId, turn_seq: 2 }).first<{ publish_state: string; commit_sha: string } | undefined>('publish_state', 'commit_sha');
      return row?.publish_state === 'published' ? row : undefined;
    }, 'turn 2 published', 180_000);
    const pulls = await listGiteaPulls(repo.owner, repo.name);
    assert.equal(pulls.length, 1, 'still one pull request');
    const commits = await giteaApi<Array<{ sha: string }>>('GET', `/repos/${repo.owner}/${repo.name}/pulls/${pulls[0]!.number}/commits`);
    assert.equal(commits.length, 2);
    assert.ok(commits.some((c) => c.sha === turn2.commit_sha), 'turn 2\'s commit is in the pull request');
    const files = await giteaApi<{ files: Array<{ filename: string }> }>('GET', `/repos/${repo.owner}/${repo.name}/git/commits/${turn2.commit_sha}?files=true`);
    assert.deepEqual(files.files.map((f) => f.filename).sort(), ['.gitignore', 'greeting.txt'], 'the second commit holds only turn 2\'s change, no ignored file');
    assert.equal((await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'pull_request' }).count<Array<{ count: string }>>('* as count'))[0]?.count, '2');
  });

  it('a chat in a temporary workspace captures nothing and has no pull request', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'write_file', arguments: { path: 'scratch.txt', content: 'nothing to publish\n' } },
      { kind: 'json', content: 'Wrote scratch.txt' },
    );
    const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Write a scratch file', model: AGENT_MODEL, repo: null });
    assert.equal(created.status, 201);
    const jobId = ((await created.json()) as { job_id: string }).job_id;
    const view = await waitFor(async () => {
      const v = (await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`)).json()) as { turns: Array<{ state: string }>; pull_request: unknown };
      return v.turns[0]?.state === 'completed' ? v : undefined;
    }, 'the temporary chat\'s turn', 120_000);
    assert.equal(view.pull_request, null);
    assert.equal(await stack.t.db('agent_turn_patches').where({ job_id: jobId }).first(), undefined, 'no capture');
  });
});
