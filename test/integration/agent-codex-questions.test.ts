/**
 * The codex driver's questions, at the driver (activities/agent/native-driver.ts with
 * codex-app-server.ts): the real Codex CLI runs as `codex app-server` in a real sandbox container,
 * reaching a fake Responses upstream only through the model relay. The upstream makes Codex call
 * `request_user_input`; the QuestionChannel given to the driver is asked the normalized question,
 * and its reply reaches the upstream in the `function_call_output` (an answer as Codex's own shape,
 * a decline as text). A stored thread Codex does not know is reset with a `session_reset` notice.
 * A turn cancelled while its question waits ends at once.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { relayContainerPort, relayContainerSocket, relayHostDir, startModelRelay, type ModelRelay } from '../../activities/agent/model-relay';
import { nativeDriver } from '../../activities/agent/native-driver';
import { DriverAbortedError } from '../../activities/agent/retry-policy';
import type { DriverInput, EventSink, QuestionChannel, QuestionReply, QuestionRequest } from '../../activities/agent/types';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { ensureSandboxContainer, memberPaths } from '../../activities/docker/sandbox-container';
import { sandboxContainerName } from '../../agent/sandboxes/names';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId, testRuntime } from '../support/docker';
import { startFakeResponsesUpstream, type FakeResponsesUpstream } from '../support/fake-responses-upstream';
import { waitFor } from '../support/wait';

type Json = Record<string, unknown>;

const UID = 1001;
const GRANT = 'agr_codexquestionscodexquestionscodexquestion';
const QUESTION = { id: 'database', header: 'Database', question: 'Which database should the service use?', options: [{ label: 'Postgres (Recommended)', description: 'Relational, already deployed' }, { label: 'SQLite', description: 'Embedded, simplest' }] };

function tools(body: Json): string[] {
  return ((body.tools ?? []) as Json[]).map((t) => t.name).filter((n): n is string => typeof n === 'string');
}

/** The `function_call_output` this call answers (the last input item; earlier ones are history). */
function fcOutput(body: Json): Json | undefined {
  const last = ((body.input ?? []) as Json[]).at(-1);
  return last?.type === 'function_call_output' ? last : undefined;
}

describe('codex driver: request_user_input answered through the QuestionChannel (real Codex app-server in the sandbox)', function () {
  this.timeout(180_000);
  let upstream: FakeResponsesUpstream;
  let relay: ModelRelay;
  let root: string;
  let sandbox: DockerSandbox;

  before(async () => {
    upstream = await startFakeResponsesUpstream();
    // A call after the tool's output echoes that output; any other call asks (when the tool is offered).
    upstream.script((request) => {
      const output = fcOutput(request.body);
      if (output) return { output: [{ type: 'message', id: 'msg_2', role: 'assistant', content: [{ type: 'output_text', text: `ECHO ${String(output.output)}`, annotations: [] }] }] };
      if (!tools(request.body).includes('request_user_input')) return { output: [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: `no question tool: ${tools(request.body).join(',')}`, annotations: [] }] }] };
      return { output: [{ type: 'function_call', id: 'fc_1', call_id: 'call_ask_1', name: 'request_user_input', arguments: JSON.stringify({ questions: [QUESTION] }) }] };
    });
    root = mkdtempSync(join(tmpdir(), 'cxq-'));
    const groupId = `grp-${testRunId}-cxq`;
    const relayDir = relayHostDir(root, sandboxContainerName(groupId));
    mkdirSync(relayDir, { recursive: true, mode: 0o755 });
    const { containerName } = await ensureSandboxContainer(docker(), {
      jobId: 'job_cxqcxqcxqcxqcxqcxqcx', groupId, generation: 1, attemptId: 'att_1', hostId: 'host-a',
      uid: UID, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 1024 * 1024 * 1024, nanoCpus: 1e9 }, extraLabels: testLabels(), relayDir,
    });
    sandbox = new DockerSandbox(docker(), containerName, UID);
    relay = await startModelRelay({ hostDir: relayDir, uid: UID, gatewayUrl: upstream.url.replace(/\/v1$/, ''), grantToken: GRANT, maxBodyBytes: 32 * 1024 * 1024 });
  });

  after(async () => {
    await relay?.close();
    await upstream?.close();
    await removeContainers();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const turn = async (prompt: string, reply: (request: QuestionRequest, signal: AbortSignal) => QuestionReply | Promise<QuestionReply>, abort = new AbortController()) => {
    const asked: QuestionRequest[] = [];
    const questions: QuestionChannel = {
      ask: (request, signal) => {
        asked.push(request);
        return Promise.resolve(reply(request, signal));
      },
    };
    const events: Array<{ type: string; payload: Json }> = [];
    const sink: EventSink = { emit: (type, payload) => { events.push({ type, payload }); return Promise.resolve(); } };
    const input: DriverInput = {
      prompt, model: 'gpt-5.5', gatewayUrl: 'http://unused.invalid', grantToken: GRANT, jobId: 'job_cxqcxqcxqcxqcxqcxqcx', turnSeq: 1,
      sessionDir: memberPaths(UID).sessionDir, sandbox, events: sink, signal: abort.signal, deadline: Date.now() + 120_000,
      relay: { socket: relayContainerSocket(UID), port: relayContainerPort(UID) }, questions,
    };
    const before = upstream.requests.length;
    const outcome = await nativeDriver('codex')(input);
    return { outcome, asked, events, requests: upstream.requests.slice(before) };
  };

  it('asks the channel the normalized question; the answer reaches the model as Codex’s answers object', async () => {
    const { outcome, asked, events, requests } = await turn('Ask me which database to use.', () => ({ kind: 'answered', answers: { database: ['SQLite'] } }));
    assert.deepEqual(asked, [{ requestId: asked[0]?.requestId, cli: 'codex', questions: [{ ...QUESTION, multi_select: false }] }]);
    assert.equal(requests.length, 2, 'one call that asks, one that answers');
    assert.ok(requests.every((r) => r.headers.authorization === `Bearer ${GRANT}`), 'the relay sent the grant');
    assert.equal(fcOutput(requests[1]!.body)?.output, JSON.stringify({ answers: { database: { answers: ['SQLite'] } } }));
    assert.equal(outcome.result, `ECHO ${JSON.stringify({ answers: { database: { answers: ['SQLite'] } } })}`);
    assert.ok(events.some((e) => e.type === 'message' && e.payload.text === outcome.result));
    assert.ok(!events.some((e) => e.type === 'question'), 'the channel, not the driver, emits the question event');
    const stored = (await sandbox.readFile(`${memberPaths(UID).sessionDir}/codex.session`, 1024)).trim();
    assert.match(stored, /^[0-9a-f-]{36}$/, 'the thread id is stored for the next turn');
  });

  it('resumes the stored thread next turn; a decline reaches the model as text', async () => {
    const { outcome, events, requests } = await turn('Ask me again.', () => ({ kind: 'declined', message: 'decide yourself' }));
    assert.ok(requests[0]!.rawBody.includes('Ask me which database to use.'), 'the first turn’s history was resumed');
    assert.equal(fcOutput(requests[1]!.body)?.output, JSON.stringify({ answers: { database: { answers: ['(the owner declined to answer: decide yourself)'] } } }));
    assert.match(outcome.result, /declined to answer: decide yourself/);
    assert.ok(!events.some((e) => e.type === 'notice' && e.payload.kind === 'session_reset'));
  });

  it('a stored thread Codex does not know: session_reset, then a fresh thread answers', async () => {
    await sandbox.writeFile(`${memberPaths(UID).sessionDir}/codex.session`, '01a21847-0000-7000-8000-000000000000\n');
    const { outcome, events, requests } = await turn('Fresh start.', () => ({ kind: 'unanswered', message: 'nobody there' }));
    assert.ok(events.some((e) => e.type === 'notice' && e.payload.kind === 'session_reset'));
    assert.ok(!requests[0]!.rawBody.includes('Ask me again.'), 'a new thread has no old history');
    assert.match(outcome.result, /\(no answer: nobody there\)/);
    const stored = (await sandbox.readFile(`${memberPaths(UID).sessionDir}/codex.session`, 1024)).trim();
    assert.notEqual(stored, '01a21847-0000-7000-8000-000000000000');
  });

  it('a turn cancelled while the question waits ends at once (the wait is aborted, Codex is killed)', async () => {
    const abort = new AbortController();
    const started = Date.now();
    const waiting = (_request: QuestionRequest, signal: AbortSignal) => {
      setTimeout(() => abort.abort(new Error('turn cancelled')), 300);
      return new Promise<QuestionReply>((resolve) => signal.addEventListener('abort', () => resolve({ kind: 'unanswered', message: 'the turn ended' })));
    };
    await assert.rejects(turn('Ask me which database to use.', waiting, abort), DriverAbortedError);
    assert.ok(Date.now() - started < 30_000, 'no wait for the deadline');
    await waitFor(async () => {
      const listed = await sandbox.exec(['sh', '-c', 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "'], { timeoutMs: 10_000, maxOutputBytes: 64 * 1024 });
      return !listed.stdout.includes('codex app-server');
    }, 'no codex app-server left running');
  });
});
