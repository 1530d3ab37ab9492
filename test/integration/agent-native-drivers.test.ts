/**
 * The native drivers as real agent turns (PostgreSQL, Temporal, Docker, gateway, a fake chat
 * upstream on loopback): Claude Code and Codex CLI, the binaries from the sandbox image, run in the
 * chat's container as the member with no network, and reach the gateway only through the model
 * relay. The upstream answers the first call with a tool call naming a tool the CLI offered (a file
 * write) and the next with a final text: the file exists in the workspace, the events show the tool
 * use and its result, the turn's result is the CLI's answer, and a second turn resumes the CLI's
 * session (the upstream sees the first turn's prompt again). A refused model call fails the turn
 * with the CLI's reason and leaves the sandbox usable for the next turn.
 */
import assert from 'node:assert/strict';
import { startAgentStack, ownerCall, AGENT_MODEL, type AgentStack } from '../support/agent-stack';
import { codexShellCall } from '../support/codex-cli';
import { chatContainer, fileInChat } from '../support/docker';
import type { Behaviour, RecordedRequest } from '../support/fake-upstream';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

interface TurnView { seq: number; state: string; result: string | null; error?: string }

const FINAL = 'All done from the fake model.';

/** Tool names a chat request offered. */
function offered(request: RecordedRequest): string[] {
  const tools = ((request.body as Json | undefined)?.tools ?? []) as Json[];
  return tools.map((t) => (t.function as Json | undefined)?.name).filter((name): name is string => typeof name === 'string');
}

function streamed(request: RecordedRequest): boolean {
  return (request.body as Json | undefined)?.stream === true;
}

/** The final answer, streamed when the request asked for it. */
const finalText: Behaviour = { kind: 'dynamic', choose: (request) => (streamed(request) ? { kind: 'sse', pieces: [FINAL] } : { kind: 'json', content: FINAL }) };

/** Codex's shell tool (whichever it offered) writing `file`. */
function codexWrite(file: string, text: string): Behaviour {
  return {
    kind: 'dynamic',
    choose: (request) => {
      const call = codexShellCall(((request.body as Json | undefined)?.tools ?? []) as Json[], `printf '%s\\n' '${text}' > ${file}`);
      return call ? { kind: 'tool_call', id: 'call_shell_1', ...call } : { kind: 'status', status: 400, message: `no shell tool offered: ${offered(request).join(', ')}` };
    },
  };
}

/** Claude Code's Write tool writing `file`. */
function claudeWrite(file: string, text: string): Behaviour {
  return {
    kind: 'dynamic',
    choose: (request) => (offered(request).includes('Write')
      ? { kind: 'tool_call', id: 'toolu_write_1', name: 'Write', arguments: { file_path: file, content: `${text}\n` } }
      : { kind: 'status', status: 400, message: `no Write tool offered: ${offered(request).join(', ')}` }),
  };
}

const QUESTION = 'Which database should the service use?';

/** The CLI's own question tool, asking the owner which database to use. */
function askQuestion(driver: 'codex' | 'claude-code'): Behaviour {
  const name = driver === 'codex' ? 'request_user_input' : 'AskUserQuestion';
  const options = [{ label: 'Postgres', description: 'Relational' }, { label: 'SQLite', description: 'Embedded' }];
  const questions = driver === 'codex'
    ? [{ id: 'database', header: 'Database', question: QUESTION, options }]
    : [{ question: QUESTION, header: 'Database', options, multiSelect: false }];
  return {
    kind: 'dynamic',
    choose: (request) => (offered(request).includes(name)
      ? { kind: 'tool_call', id: 'call_ask_1', name, arguments: { questions } }
      : { kind: 'status', status: 400, message: `no ${name} tool offered: ${offered(request).join(', ')}` }),
  };
}

async function startJob(stack: AgentStack, driver: string, prompt: string): Promise<string> {
  const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt, model: AGENT_MODEL, repo: null, driver });
  assert.equal(created.status, 201, await created.clone().text());
  return ((await created.json()) as { job_id: string }).job_id;
}

async function turns(stack: AgentStack, jobId: string): Promise<TurnView[]> {
  const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}`);
  return ((await res.json()) as { turns: TurnView[] }).turns;
}

async function settled(stack: AgentStack, jobId: string, count: number): Promise<TurnView[]> {
  return waitFor(async () => {
    const list = await turns(stack, jobId);
    return list.length === count && list.every((t) => ['completed', 'failed', 'cancelled'].includes(t.state)) ? list : undefined;
  }, `${count} settled turns`, 150_000);
}

async function workspaceFile(jobId: string, path: string): Promise<string> {
  const info = await (await chatContainer(jobId)).inspect();
  assert.equal(info.HostConfig.NetworkMode, 'none', 'the sandbox has no network');
  return fileInChat(jobId, path);
}

describe('native drivers in the sandbox (Codex CLI, Claude Code) through the model relay', function () {
  this.timeout(400_000);
  let stack: AgentStack;

  before(async () => {
    stack = await startAgentStack({ modelFields: 'supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls]' });
  });
  after(async () => {
    await stack?.close();
  });

  for (const driver of ['claude-code', 'codex'] as const) {
    it(`${driver}: writes the file the model asked for, reports the tool use, answers, and resumes its session next turn`, async () => {
      const file = `/workspace/from-${driver}.txt`;
      const text = `hello from ${driver}`;
      const before = stack.upstream.chatRequests().length;
      stack.upstream.enqueue(driver === 'codex' ? codexWrite(file, text) : claudeWrite(file, text), finalText, finalText);
      const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: `Write ${text} into ${file}. FIRST-PROMPT-${driver}`, model: AGENT_MODEL, repo: null, driver });
      assert.equal(created.status, 201, await created.clone().text());
      const jobId = ((await created.json()) as { job_id: string }).job_id;
      const [first] = await settled(stack, jobId, 1);
      assert.equal(first!.state, 'completed', `turn 1: ${first!.error ?? ''}`);
      assert.equal(first!.result, FINAL);
      assert.equal((await workspaceFile(jobId, file)).trim(), text);

      const events = await stack.t.db('agent_events').where({ job_id: jobId }).orderBy('seq').select<Array<{ event_type: string; payload: Json }>>('event_type', 'payload');
      const use = events.find((e) => e.event_type === 'tool_use');
      const result = events.find((e) => e.event_type === 'tool_result');
      assert.ok(use, `a tool_use event (got ${events.map((e) => e.event_type).join(', ')})`);
      assert.ok(result, 'a tool_result event');
      assert.equal(result.payload.is_error, false, JSON.stringify(result.payload));
      assert.ok(events.some((e) => e.event_type === 'message' && e.payload.text === FINAL), 'the answer as a message event');
      const calls = stack.upstream.chatRequests().slice(before);
      assert.equal(calls.length, 2, 'one tool call, one answer');
      assert.ok(calls.every((c) => c.headers.authorization === `Bearer upstream-key`), 'the upstream sees the gateway’s key, never a grant');

      // The second turn resumes the CLI's session: its request carries the first turn's prompt.
      const next = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'And now say done.' });
      assert.equal(next.status, 201, await next.clone().text());
      const [, second] = await settled(stack, jobId, 2);
      assert.equal(second!.state, 'completed', `turn 2: ${second!.error ?? ''}`);
      const resumed = stack.upstream.chatRequests().slice(before + 2);
      assert.ok(resumed.length >= 1);
      assert.ok(resumed[0]!.rawBody.includes(`FIRST-PROMPT-${driver}`), 'the resumed session sends the first turn’s history');
      assert.ok(resumed[0]!.rawBody.includes('And now say done.'));
      assert.ok(!events.some((e) => e.event_type === 'notice' && e.payload.kind === 'session_reset'));
    });

    it(`${driver}: a model call the upstream refuses fails the turn with the CLI's reason; the sandbox stays usable`, async () => {
      // Every call refused while the first turn runs (Claude Code repeats a failed call once without streaming).
      stack.upstream.setDefault({ kind: 'status', status: 400, message: `refused-for-${driver}` });
      const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Say something.', model: AGENT_MODEL, repo: null, driver });
      assert.equal(created.status, 201, await created.clone().text());
      const jobId = ((await created.json()) as { job_id: string }).job_id;
      const [first] = await settled(stack, jobId, 1);
      stack.upstream.setDefault(undefined);
      assert.equal(first!.state, 'failed', `turn 1 ended ${first!.state}: ${first!.result ?? ''}`);
      assert.match(first!.error ?? '', new RegExp(`The ${driver} CLI .*without an answer`));
      const failed = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'turn_failed' }).first<{ payload: Json } | undefined>('payload');
      assert.ok(failed, 'a turn_failed event');
      assert.ok(!JSON.stringify(failed.payload).includes('agr_'), 'no grant in the failure');
      stack.upstream.enqueue(finalText);
      const next = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/turns`, { prompt: 'Try again.' });
      assert.equal(next.status, 201, await next.clone().text());
      const [, second] = await settled(stack, jobId, 2);
      assert.equal(second!.state, 'completed', `turn 2: ${second!.error ?? ''}`);
      assert.equal(second!.result, FINAL);
    });
  }

  for (const driver of ['claude-code', 'codex'] as const) {
    it(`${driver}: the CLI's question reaches the owner as a question event; the owner's answer reaches the CLI and its model`, async () => {
      const before = stack.upstream.chatRequests().length;
      stack.upstream.enqueue(askQuestion(driver), finalText);
      const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Ask me which database to use, then say done.', model: AGENT_MODEL, repo: null, driver });
      assert.equal(created.status, 201, await created.clone().text());
      const jobId = ((await created.json()) as { job_id: string }).job_id;
      const pending = await waitFor(async () => {
        const res = await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}/questions?pending=true`);
        const list = ((await res.json()) as { questions: Json[] }).questions;
        return list.length > 0 ? list[0] : undefined;
      }, 'a pending question', 150_000);
      assert.equal(pending.cli, driver);
      const asked = pending.questions as Array<{ id: string; question: string; options: Array<{ label: string }> }>;
      assert.equal(asked[0]!.question, QUESTION);
      assert.deepEqual(asked[0]!.options.map((o) => o.label).filter((l) => l === 'Postgres' || l === 'SQLite'), ['Postgres', 'SQLite']);
      const event = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'question' }).first<{ payload: Json; attempt_id: string } | undefined>('payload', 'attempt_id');
      assert.ok(event, 'a question event');
      assert.equal(event.attempt_id, pending.attempt_id);
      assert.equal(event.payload.request_id, pending.request_id);

      const answered = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/attempts/${String(pending.attempt_id)}/questions/${encodeURIComponent(String(pending.request_id))}/answer`, { answers: { [asked[0]!.id]: ['SQLite'] } });
      assert.equal(answered.status, 200, await answered.clone().text());
      const [first] = await settled(stack, jobId, 1);
      assert.equal(first!.state, 'completed', `turn 1: ${first!.error ?? ''}`);
      assert.equal(first!.result, FINAL);
      const calls = stack.upstream.chatRequests().slice(before);
      assert.ok(calls.length >= 2);
      assert.ok(calls[1]!.rawBody.includes('SQLite'), 'the model receives the owner’s answer');
      const notices = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'notice' }).select<Array<{ payload: Json }>>('payload');
      assert.ok(notices.some((n) => n.payload.kind === 'question_answered'), 'a notice says the question was answered');
      const late = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/attempts/${String(pending.attempt_id)}/questions/${encodeURIComponent(String(pending.request_id))}/answer`, { answers: { [asked[0]!.id]: ['Postgres'] } });
      assert.equal(late.status, 409, 'a finished attempt refuses another answer');
    });
  }

  // The model relay retries for every CLI with the drivers' one policy; the CLIs' own retries are off.
  for (const driver of ['claude-code', 'codex'] as const) {
    it(`${driver}: the relay retries a 429 (Retry-After: 1) and a 5xx, then the turn completes; the upstream sees 3 calls`, async () => {
      const before = stack.upstream.chatRequests().length;
      stack.upstream.enqueue({ kind: 'status', status: 429, retryAfter: 1 }, { kind: 'status', status: 503 }, finalText);
      const jobId = await startJob(stack, driver, 'Say something after the retries.');
      const [first] = await settled(stack, jobId, 1);
      assert.equal(first!.state, 'completed', `turn 1: ${first!.error ?? ''}`);
      assert.equal(first!.result, FINAL);
      assert.equal(stack.upstream.chatRequests().length - before, 3, 'each failure tried once more by the relay, not by the CLI too');
      const retries = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'retry' }).orderBy('seq').select<Array<{ payload: Json }>>('payload');
      assert.deepEqual(retries.map((r) => ({ ...r.payload, reason: undefined, wait_ms: undefined })), [
        { attempt: 1, status: 429, retry_after: 1, source: 'relay', reason: undefined, wait_ms: undefined },
        { attempt: 2, status: 502, source: 'relay', reason: undefined, wait_ms: undefined },
      ]);
      assert.equal(retries[0]!.payload.wait_ms, 1000, 'Retry-After 1 s honoured (longer than the first 500 ms backoff)');
      const second = Number(retries[1]!.payload.wait_ms);
      assert.ok(second >= 1000 && second <= 1250, `retry 2 waits 1 s plus at most 25 % jitter (${second})`);
    });
  }

  // Last: a Retry-After of 120 s may pause the gateway's upstream key for the rest of this stack.
  for (const driver of ['claude-code', 'codex'] as const) {
    it(`${driver}: a Retry-After above 60 s ends the relay's retries and fails the turn saying so`, async () => {
      stack.upstream.setDefault({ kind: 'status', status: 429, retryAfter: 120 });
      const jobId = await startJob(stack, driver, 'Say something.');
      const [first] = await settled(stack, jobId, 1);
      stack.upstream.setDefault(undefined);
      assert.equal(first!.state, 'failed', `turn 1 ended ${first!.state}: ${first!.result ?? ''}`);
      assert.match(first!.error ?? '', /The gateway answered HTTP 429 and the model relay stopped retrying: the required delay of 1\d\d s exceeds 60 s/);
      const retries = await stack.t.db('agent_events').where({ job_id: jobId, event_type: 'retry' }).count<Array<{ count: string }>>({ count: '*' });
      assert.equal(Number(retries[0]!.count), 0, 'no wait was attempted');
    });
  }
});
