/**
 * Chats end to end over the real stack (PostgreSQL, Temporal, Docker, gateway with a fake LLM
 * upstream scripting tool calls): turns run strictly in order in one retained container whose
 * files persist, a cancelled middle turn never lets a later one overtake, a running turn can be
 * stopped, owners see only their own jobs, and the event stream replays in order.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentStack, ownerCall, makeOwner, docker, containerCommands, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { waitFor } from '../support/wait';
import { logIn } from '../support/accounts';

interface JobView {
  job_id: string;
  title: string;
  base_sha: string | null;
  conversation_state: string;
  turns: Array<{ turn_id: string; seq: number; state: string; result: string | null; error?: string; started_at: string | null; finished_at: string | null }>;
}

async function createJob(stack: AgentStack, prompt: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null, ...extra });
  assert.equal(res.status, 201, await res.clone().text());
  const body = (await res.json()) as { job_id: string; turn: { seq: number; state: string } };
  assert.deepEqual({ seq: body.turn.seq, state: body.turn.state }, { seq: 1, state: 'queued' });
  return body.job_id;
}

async function addTurn(stack: AgentStack, jobId: string, prompt: string): Promise<number> {
  const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { seq: number }).seq;
}

async function job(stack: AgentStack, jobId: string): Promise<JobView> {
  const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`);
  assert.equal(res.status, 200);
  return (await res.json()) as JobView;
}

const terminal = (state: string) => ['completed', 'failed', 'cancelled'].includes(state);

async function settled(stack: AgentStack, jobId: string, turns: number, timeoutMs = 60_000): Promise<JobView> {
  return waitFor(async () => {
    const view = await job(stack, jobId);
    return view.turns.length === turns && view.turns.every((t) => terminal(t.state)) ? view : undefined;
  }, `${turns} settled turns of ${jobId}`, timeoutMs);
}

/** Asserts turn n finished before turn n+1 started, for every finished pair. */
function assertOrdered(view: JobView): void {
  const ran = view.turns.filter((t) => t.started_at !== null);
  for (let i = 1; i < ran.length; i += 1) {
    assert.ok(ran[i - 1]!.finished_at! <= ran[i]!.started_at!, `turn ${ran[i - 1]!.seq} finished before turn ${ran[i]!.seq} started`);
  }
}

describe('agent chats (PostgreSQL + Temporal + Docker + gateway)', function () {
  this.timeout(180_000);
  let stack: AgentStack;

  const scratch = mkdtempSync(join(tmpdir(), 'agent-repo-'));
  const bare = join(scratch, 'app.git');
  let repoSha = '';

  before(async () => {
    // A repository the deployment allowlists, served over file:// (the host clones it, not the sandbox).
    const work = join(scratch, 'work');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: work, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['init', '-q', '-b', 'main', work]);
    writeFileSync(join(work, 'README.md'), 'hello from the repository\n');
    git('add', '.');
    git('commit', '-q', '-m', 'first');
    git('push', '-q', bare, 'main');
    repoSha = git('rev-parse', 'HEAD').trim();
    stack = await startAgentStack({ env: { AGENT_REPO_ALLOWLIST: `file://${bare}` } });
  });
  after(async () => {
    await stack?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('clones an allowlisted repository at its base into the workspace and records the base', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'cat README.md; git rev-parse HEAD; git config --list --local' } },
      { kind: 'json', content: 'read the readme' },
    );
    const jobId = await createJob(stack, 'Read the README', { repo: `file://${bare}`, base_ref: 'main' });
    const view = await settled(stack, jobId, 1);
    assert.equal(view.turns[0]!.state, 'completed', view.turns[0]!.error);
    assert.equal(view.base_sha, repoSha);
    const toolOutput = stack.upstream.requests.map((r) => r.rawBody).join('\n');
    assert.ok(toolOutput.includes('hello from the repository') && toolOutput.includes(repoSha), 'the sandbox sees the checkout at the base');
    const listed = (await (await ownerCall(stack, 'GET', '/v1/agent/jobs?temporary=false')).json()) as { jobs: Array<{ job_id: string }> };
    assert.ok(listed.jobs.some((j) => j.job_id === jobId));
    const temporary = (await (await ownerCall(stack, 'GET', '/v1/agent/jobs?temporary=true')).json()) as { jobs: Array<{ job_id: string; repo: string | null }> };
    assert.ok(temporary.jobs.every((j) => j.repo === null) && !temporary.jobs.some((j) => j.job_id === jobId));
  });

  it('accepts an owner\'s access token as well as an API key', async () => {
    const email = `token-owner-${Date.now()}@example.com`;
    await makeOwner(stack.gateway.url, stack.t, email);
    const session = await logIn(stack.gateway.url, email, 'correct horse battery');
    const res = await fetch(`${stack.api.url}/v1/agent/jobs`, { headers: { authorization: `Bearer ${session.accessToken}` } });
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { jobs: unknown[] }).jobs, []);
  });

  it('runs three turns in order in one retained container whose files persist', async () => {
    const { upstream } = stack;
    upstream.enqueue(
      { kind: 'tool_call', name: 'write_file', arguments: { path: 'notes.txt', content: 'first turn\n' } },
      { kind: 'json', content: 'Wrote notes.txt' },
      { kind: 'tool_call', name: 'bash', arguments: { command: 'echo second turn >> notes.txt && cat notes.txt' } },
      { kind: 'json', content: 'Appended' },
      { kind: 'tool_call', name: 'read_file', arguments: { path: 'notes.txt' } },
      { kind: 'json', content: 'Read it back' },
    );
    const jobId = await createJob(stack, 'Write notes.txt\nwith a first line', { title: undefined });
    await addTurn(stack, jobId, 'Append a second line');
    await addTurn(stack, jobId, 'Read the notes');
    const view = await settled(stack, jobId, 3);
    assert.deepEqual(view.turns.map((t) => [t.seq, t.state, t.result]), [[1, 'completed', 'Wrote notes.txt'], [2, 'completed', 'Appended'], [3, 'completed', 'Read it back']]);
    assertOrdered(view);
    assert.equal(view.title, 'Write notes.txt');
    assert.equal(view.conversation_state, 'idle');
    assert.match(view.base_sha ?? '', /^[0-9a-f]{40}$/);

    const toolResults = upstream.requests
      .flatMap((r) => ((r.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? []))
      .filter((m) => m.role === 'tool').map((m) => String(m.content));
    assert.ok(toolResults.some((c) => c.includes('first turn\nsecond turn')), 'turn 2 saw the file turn 1 wrote');
    const containers = await docker().listContainers({ all: true, filters: { label: [`agent.chat=${jobId}`] } });
    assert.equal(containers.length, 1, 'one retained container for the chat');
    const grants = upstream.requests.map((r) => String(r.headers.authorization ?? ''));
    assert.ok(grants.every((h) => h === 'Bearer upstream-key'), 'the upstream sees the route key, never the grant');
  });

  it('skips a cancelled queued middle turn without letting the later turn overtake', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 2; echo slept' } },
      { kind: 'json', content: 'turn one done' },
      { kind: 'json', content: 'turn three done' },
    );
    const jobId = await createJob(stack, 'Sleep a little');
    const second = await addTurn(stack, jobId, 'This one will be cancelled');
    const third = await addTurn(stack, jobId, 'Then this');
    const cancel = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns/${second}/cancel`);
    assert.equal(cancel.status, 200);
    assert.equal(((await cancel.json()) as { state: string }).state, 'cancelled');
    const view = await settled(stack, jobId, 3);
    assert.deepEqual(view.turns.map((t) => t.state), ['completed', 'cancelled', 'completed']);
    assert.equal(view.turns[1]!.started_at, null, 'the cancelled turn never started');
    assert.equal(view.turns[2]!.result, 'turn three done');
    assertOrdered(view);
    assert.equal(third, 3);
    const again = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns/${second}/cancel`);
    assert.equal(again.status, 409);
  });

  it('stops a running turn on cancel and leaves the chat idle', async () => {
    stack.upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'sleep 300' } });
    const jobId = await createJob(stack, 'Run something long');
    await waitFor(async () => (await job(stack, jobId)).turns[0]?.state === 'running', 'turn 1 running', 60_000);
    await waitFor(() => stack.upstream.requests.some((r) => JSON.stringify(r.body).includes('Run something long')), 'the model was asked', 60_000);
    const res = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns/1/cancel`);
    assert.equal(res.status, 200);
    const view = await settled(stack, jobId, 1);
    assert.equal(view.turns[0]!.state, 'cancelled');
    assert.equal(view.conversation_state, 'idle');
    const [container] = await docker().listContainers({ filters: { label: [`agent.chat=${jobId}`] } });
    assert.ok(container, 'the container is retained');
    const commands = await containerCommands(container.Id);
    assert.ok(commands.some((c) => c.includes('sleep infinity')), 'the listing sees the sandbox\'s processes');
    assert.ok(!commands.some((c) => c.includes('sleep 300')), 'the stopped turn left nothing running');
  });

  it('answers 404 for another owner\'s job and validates input', async () => {
    stack.upstream.setDefault({ kind: 'json', content: 'ok' });
    const jobId = await createJob(stack, 'Mine');
    const otherKey = await makeOwner(stack.gateway.url, stack.t, `other-${Date.now()}@example.com`);
    for (const [method, path] of [['GET', `/v1/agent/jobs/${jobId}`], ['POST', `/v1/agent/jobs/${jobId}/turns`], ['GET', `/v1/agent/jobs/${jobId}/events`], ['POST', `/v1/agent/jobs/${jobId}/turns/1/cancel`]] as const) {
      const res = await ownerCall(stack, method, path, { prompt: 'x' }, otherKey);
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    const list = (await (await ownerCall(stack, 'GET', '/v1/agent/jobs', undefined, otherKey)).json()) as { jobs: unknown[] };
    assert.deepEqual(list.jobs, []);
    const bad = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'x', model: AGENT_MODEL, repo: null, base_ref: 'main' });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /base_ref/);
    const notEntitled = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'x', model: AGENT_MODEL, repo: 'acme/secret' });
    assert.equal(notEntitled.status, 403);
    const combined = await ownerCall(stack, 'GET', '/v1/agent/jobs?temporary=true&repo=acme/app');
    assert.equal(combined.status, 400);
    const unauthenticated = await fetch(`${stack.api.url}/v1/agent/jobs`);
    assert.equal(unauthenticated.status, 401);
    await settled(stack, jobId, 1);
  });

  it('keeps owner variables write-only and builds the sandbox environment from base, owner variables and task overrides', async () => {
    const put = (name: string, value: string) => fetch(`${stack.api.url}/v1/agent/variables/${name}`, {
      method: 'PUT', headers: { authorization: `Bearer ${stack.ownerKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ value }),
    });
    assert.equal((await put('TOOL_TOKEN', 'owner-secret')).status, 200);
    assert.equal((await put('SHARED', 'from-owner')).status, 200);
    assert.equal((await put('AGENT_JOB_ID', 'spoof')).status, 400);
    assert.equal((await put('1BAD', 'x')).status, 400);
    const listed = await (await ownerCall(stack, 'GET', '/v1/agent/variables')).text();
    assert.match(listed, /TOOL_TOKEN/);
    assert.doesNotMatch(listed, /owner-secret/, 'values are never returned');

    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'echo "vars=$TOOL_TOKEN/$SHARED/$TASK_ONLY/$AGENT_JOB_ID"' } },
      { kind: 'json', content: 'printed' },
    );
    const jobId = await createJob(stack, 'Print my variables', { env: { SHARED: 'from-task', TASK_ONLY: 'task' } });
    await settled(stack, jobId, 1);
    const sent = stack.upstream.requests.map((r) => r.rawBody).join('\n');
    assert.ok(sent.includes(`vars=owner-secret/from-task/task/${jobId}`), 'task overrides beat owner variables, which add to the platform base');

    const del = await fetch(`${stack.api.url}/v1/agent/variables/TOOL_TOKEN`, { method: 'DELETE', headers: { authorization: `Bearer ${stack.ownerKey}` } });
    assert.equal(del.status, 200);
    const again = await fetch(`${stack.api.url}/v1/agent/variables/TOOL_TOKEN`, { method: 'DELETE', headers: { authorization: `Bearer ${stack.ownerKey}` } });
    assert.equal(again.status, 404);
  });

  it('streams the job\'s events in order and resumes after Last-Event-ID without gap or duplicate', async () => {
    stack.upstream.enqueue(
      { kind: 'tool_call', name: 'bash', arguments: { command: 'echo hi > hi.txt' } },
      { kind: 'json', content: 'done' },
    );
    const jobId = await createJob(stack, 'Say hi');
    await settled(stack, jobId, 1);
    const all = await readEvents(stack, jobId);
    const types = all.map((e) => e.event_type);
    assert.deepEqual(types.filter((t) => t.startsWith('turn_')), ['turn_queued', 'turn_started', 'turn_completed']);
    assert.ok(types.indexOf('tool_use') > types.indexOf('turn_started') && types.indexOf('tool_result') > types.indexOf('tool_use'));
    const resumed = await readEvents(stack, jobId, all[2]!.id);
    assert.deepEqual(resumed.map((e) => e.id), all.slice(3).map((e) => e.id));

    const archive = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}/workspace/archive`);
    assert.equal(archive.status, 200, await archive.clone().text());
    const dir = mkdtempSync(join(tmpdir(), 'ws-'));
    writeFileSync(join(dir, 'ws.tgz'), Buffer.from(await archive.arrayBuffer()));
    const listing = execFileSync('tar', ['-tzf', join(dir, 'ws.tgz')], { encoding: 'utf8' });
    assert.match(listing, /hi\.txt/);
  });
});

interface SseEvent {
  id: string;
  event_type: string;
}

/** Reads the job's event stream to its end (the job is inactive, so the server closes it). */
async function readEvents(stack: AgentStack, jobId: string, lastEventId?: string): Promise<SseEvent[]> {
  const res = await fetch(`${stack.api.url}/v1/agent/jobs/${jobId}/events`, {
    headers: { authorization: `Bearer ${stack.ownerKey}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const events: SseEvent[] = [];
  for (const frame of text.split('\n\n')) {
    const id = /^id: (.+)$/m.exec(frame)?.[1];
    const data = /^data: (.+)$/m.exec(frame)?.[1];
    if (id && data) events.push({ id, event_type: (JSON.parse(data) as { event_type: string }).event_type });
  }
  return events;
}
