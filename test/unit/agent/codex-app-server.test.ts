/**
 * Codex's app-server protocol (activities/agent/codex-app-server.ts) on lines the real Codex
 * 0.171.0 wrote (test/fixtures/codex-app-server/): the exchange (initialize, thread start or resume,
 * turn start, stdin closed at turn/completed), a question answered through the QuestionChannel and
 * its reply on stdin, declines and missing answers said in text, bounds on the CLI's questions,
 * refused server requests, retries and failures, garbage and a server that stops early.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CodexAppServer, codexAppNotification, codexQuestions, type CodexAppServerOptions } from '../../../activities/agent/codex-app-server';
import type { CliLine } from '../../../activities/agent/cli-lines';
import { newNativeRun, type NativeRun } from '../../../activities/agent/native-lines';
import type { QuestionChannel, QuestionReply, QuestionRequest } from '../../../activities/agent/types';
import { QUESTION_LIMITS, questionEventPayload } from '../../../lib/contracts/host-api';

type Json = Record<string, unknown>;

const fixture = (name: string): string[] => readFileSync(join(__dirname, '../../fixtures/codex-app-server', name), 'utf8').split('\n').filter((l) => l !== '');
const THREAD_ID = '01a21847-76df-7a10-ae95-a48c9ee9f78a';

interface Harness {
  server: CodexAppServer;
  run: NativeRun;
  /** Every message written to stdin, parsed, including the opening line. */
  written: Json[];
  ended: () => boolean;
  feed(lines: Array<string | Json>): Array<{ type: string; payload: Json; isError?: boolean }>;
}

function harness(options: Partial<CodexAppServerOptions> = {}): Harness {
  const run = newNativeRun();
  const server = new CodexAppServer(run, { model: 'gpt-5.5', prompt: 'Ask me which database to use.', signal: new AbortController().signal, ...options });
  const written: Json[] = [];
  const take = (text: string) => written.push(...text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Json));
  take(server.opening());
  let ended = false;
  server.open({ write: take, end: () => { ended = true; } });
  const events = (lines: CliLine[]) => lines.flatMap((l) => (l.kind === 'event' ? [{ type: l.type, payload: l.payload, ...(l.isError ? { isError: true } : {}) }] : []));
  return { server, run, written, ended: () => ended, feed: (lines) => lines.flatMap((l) => events(server.line({ line: typeof l === 'string' ? l : JSON.stringify(l) }))) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function channel(reply: (request: QuestionRequest, signal: AbortSignal) => Promise<QuestionReply>): QuestionChannel & { asked: QuestionRequest[] } {
  const asked: QuestionRequest[] = [];
  return { asked, ask: (request, signal) => { asked.push(request); return reply(request, signal); } };
}

const askLine = (id: number, questions: unknown): Json => ({ method: 'item/tool/requestUserInput', id, params: { threadId: THREAD_ID, turnId: 't', itemId: 'call_ask_1', questions, isBlocking: false, autoResolutionMs: null } });

describe('Codex app-server protocol', () => {
  it('a recorded turn with a question: the exchange, the answer written back, the events, the result, stdin closed', async () => {
    const questions = channel(() => Promise.resolve({ kind: 'answered', answers: { database: ['SQLite'] } }));
    const h = harness({ questions });
    const lines = fixture('question-default-mode.jsonl');
    const ask = lines.findIndex((l) => l.includes('"item/tool/requestUserInput"'));
    assert.ok(ask > 0);
    const before = h.feed(lines.slice(0, ask + 1));
    assert.deepEqual(h.written.map((m) => m.method ?? `reply ${String(m.id)}`), ['initialize', 'initialized', 'thread/start', 'turn/start']);
    assert.deepEqual((h.written[0]!.params as Json).capabilities, { experimentalApi: false });
    assert.deepEqual(h.written[2]!.params, { model: 'gpt-5.5', cwd: '/workspace', approvalPolicy: 'never', sandbox: 'danger-full-access' });
    assert.deepEqual(h.written[3]!.params, { threadId: THREAD_ID, input: [{ type: 'text', text: 'Ask me which database to use.', text_elements: [] }] });
    assert.deepEqual(before, [], 'thread, config and user-message notifications make no events');

    await tick();
    assert.deepEqual(questions.asked, [{ requestId: '0', cli: 'codex', questions: [{ id: 'database', header: 'Database', question: 'Which database should the service use?', multi_select: false, options: [{ label: 'Postgres (Recommended)', description: 'Relational, already deployed' }, { label: 'SQLite', description: 'Embedded, simplest' }] }] }]);
    assert.deepEqual(h.written[4], { id: 0, result: { answers: { database: { answers: ['SQLite'] } } } });
    assert.equal(h.ended(), false, 'stdin stays open until the turn completes');

    const after = h.feed(lines.slice(ask + 1));
    assert.deepEqual(after.map((e) => `${e.type}:${String(e.payload.role)}`), ['message:assistant']);
    assert.match(h.run.result ?? '', /^ECHO function_call_output: .*SQLite/);
    assert.equal(h.run.sessionId, THREAD_ID);
    assert.equal(h.run.produced, true);
    assert.equal(h.ended(), true);
    await h.server.settle('');
    assert.equal(h.run.failure, undefined);
  });

  it('resumes the stored thread; a thread the server does not know is a failure with no output (the driver starts fresh)', () => {
    const h = harness({ resumeId: '01a21847-0000-7000-8000-000000000000' });
    h.feed([{ id: 1, result: { userAgent: 'x/0.171.0', codexHome: '/h', platformFamily: 'unix', platformOs: 'linux' } }]);
    assert.deepEqual(h.written[2], { id: 2, method: 'thread/resume', params: { threadId: '01a21847-0000-7000-8000-000000000000', model: 'gpt-5.5', cwd: '/workspace', approvalPolicy: 'never', sandbox: 'danger-full-access', excludeTurns: true } });
    // What Codex 0.171.0 answers for an unknown thread.
    h.feed(['{"error":{"code":-32600,"message":"no rollout found for thread id 01a21847-0000-7000-8000-000000000000"},"id":2}']);
    assert.equal(h.ended(), true);
    assert.equal(h.run.result, undefined);
    assert.equal(h.run.produced, false);
    assert.match(h.run.failure ?? '', /refused thread\/resume: no rollout found/);
  });

  it('a JSON-RPC error for initialize or turn/start fails the run and closes stdin', () => {
    const init = harness();
    init.feed([{ id: 1, error: { code: -32600, message: 'bad client' } }]);
    assert.equal(init.run.failure, 'the app-server refused initialize: bad client');
    assert.equal(init.ended(), true);
    const turn = harness();
    turn.feed([{ id: 1, result: {} }, { id: 2, result: { thread: { id: THREAD_ID } } }, { id: 3, error: { code: -32600, message: 'no input' } }]);
    assert.equal(turn.run.failure, 'the app-server refused turn/start: no input');
    assert.equal(turn.ended(), true);
  });

  it('Codex retries are retry events; the final error and a failed turn/completed are the failure (recorded against a 503 upstream)', () => {
    const h = harness();
    const events = h.feed(fixture('upstream-503.jsonl'));
    assert.deepEqual(events[0], { type: 'retry', payload: { attempt: 1, wait_ms: 200, reason: 'Reconnecting... 1/5: unexpected status 503 Service Unavailable: overloaded 5, url: http://127.0.0.1:41197/v1/responses', source: 'cli' } });
    assert.equal(events[1]!.payload.attempt, 2);
    assert.equal(events[1]!.payload.wait_ms, 400);
    assert.equal(events[2]!.type, 'notice');
    assert.equal(events.length, 3);
    assert.equal(h.run.failure, 'unexpected status 503 Service Unavailable: overloaded 30, url: http://127.0.0.1:41197/v1/responses');
    assert.equal(h.run.result, undefined);
    assert.equal(h.run.produced, false);
    assert.equal(h.ended(), true);
  });

  it('items: commands as shell tool_use/tool_result (a failed one an error), file changes, only the turn’s thread', () => {
    const run = newNativeRun();
    const item = (method: string, it: Json) => codexAppNotification(method, { item: it, threadId: THREAD_ID, turnId: 't' }, run);
    const command = { type: 'commandExecution', id: 'call_1', pluginId: null, scriptPath: null, command: "/bin/bash -lc 'ls'", cwd: '/workspace', processId: null, source: 'agent', commandActions: [], durationMs: null };
    const lines = [
      ...item('item/started', { ...command, status: 'inProgress', aggregatedOutput: null, exitCode: null }),
      ...item('item/completed', { ...command, status: 'completed', aggregatedOutput: 'a.txt\n', exitCode: 0 }),
      ...item('item/completed', { ...command, id: 'call_2', status: 'failed', aggregatedOutput: '', exitCode: 1 }),
      ...item('item/completed', { type: 'fileChange', id: 'call_3', changes: [{ path: '/workspace/a.txt', kind: { type: 'add' }, diff: 'x' }], status: 'completed' }),
      ...item('item/completed', { type: 'reasoning', id: 'r', summary: [], content: [] }),
      ...item('item/completed', { type: 'agentMessage', id: 'msg_1', text: 'Done.', phase: null, memoryCitation: null, delivery: null, questions: null, moderation: null }),
    ].flatMap((l) => (l.kind === 'event' ? [l] : []));
    assert.deepEqual(lines.map((l) => `${l.type}:${String(l.payload.tool_name ?? l.payload.role)}`), [
      'tool_use:shell', 'tool_result:shell', 'tool_use:shell', 'tool_result:shell', 'tool_use:apply_patch', 'tool_result:apply_patch', 'message:assistant',
    ]);
    assert.deepEqual(lines[0]!.payload.input, { command: "/bin/bash -lc 'ls'" });
    assert.equal(lines[1]!.payload.output, 'a.txt\n');
    assert.equal(lines[3]!.isError, true);
    assert.equal(run.lastText, 'Done.');

    const h = harness();
    h.feed([{ id: 1, result: {} }, { id: 2, result: { thread: { id: THREAD_ID } } }]);
    const other = h.feed([{ method: 'item/completed', params: { threadId: 'sub-agent-thread', turnId: 'x', item: { type: 'agentMessage', id: 'm', text: 'not ours' } } }]);
    assert.deepEqual(other, []);
    assert.equal(h.run.lastText, undefined);
  });

  it('a call of the tool relay\'s MCP server is not reported (the relay records it once); another server\'s call is', () => {
    const run = newNativeRun();
    const item = (it: Json) => codexAppNotification('item/completed', { item: it, threadId: THREAD_ID, turnId: 't' }, run);
    const call = { type: 'mcpToolCall', id: 'call_9', tool: 'evhttp__echo', arguments: { message: 'hi' }, status: 'completed', result: { content: [{ type: 'text', text: 'Echo: hi' }] }, error: null };
    const relayed = item({ ...call, server: 'tools' }).filter((l) => l.kind === 'event');
    assert.deepEqual(relayed, []);
    assert.equal(run.produced, true, 'the call still counts as model output');
    const other = item({ ...call, id: 'call_10', server: 'docs' }).flatMap((l) => (l.kind === 'event' ? [`${l.type}:${String(l.payload.tool_name)}`] : []));
    assert.deepEqual(other, ['tool_use:docs.evhttp__echo', 'tool_result:docs.evhttp__echo']);
  });

  it('a decline and a missing answer reach the model as text; no channel answers at once', async () => {
    const declined = harness({ questions: channel(() => Promise.resolve({ kind: 'declined', message: 'not now' })) });
    declined.feed([askLine(7, [{ id: 'db', header: 'DB', question: 'Which?', isOther: true, isSecret: false, options: null }, { id: 'lang', header: 'Lang', question: 'Which?', options: [] }])]);
    await tick();
    assert.deepEqual(declined.written.at(-1), { id: 7, result: { answers: { db: { answers: ['(the owner declined to answer: not now)'] }, lang: { answers: ['(the owner declined to answer: not now)'] } } } });

    const none = harness();
    none.feed([askLine(8, [{ id: 'db', header: 'DB', question: 'Which?', options: [] }])]);
    await tick();
    assert.deepEqual(none.written.at(-1), { id: 8, result: { answers: { db: { answers: ['(no answer: Questions cannot be answered in this run; continue with your best judgment.)'] } } } });
  });

  it('an open question is answered "no answer" when the run ends (settle), and a stopped server is a failure naming stderr', async () => {
    const waiting = channel((_request, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve({ kind: 'unanswered', message: 'the turn ended' }))));
    const h = harness({ questions: waiting });
    h.feed([{ id: 1, result: {} }, { id: 2, result: { thread: { id: THREAD_ID } } }, askLine(0, [{ id: 'db', header: 'DB', question: 'Which?', options: [] }])]);
    await tick();
    assert.equal(waiting.asked.length, 1);
    assert.equal(h.written.length, 4, 'no reply yet');
    assert.equal(h.run.produced, true, 'a question is model output: a resumed thread that asks is not reset');
    await h.server.settle('boom: the server panicked');
    assert.deepEqual(h.written.at(-1), { id: 0, result: { answers: { db: { answers: ['(no answer: the turn ended)'] } } } });
    assert.equal(h.run.failure, 'the app-server stopped before the turn completed (stderr: boom: the server panicked)');
  });

  it('bounds the CLI’s questions to what a question event may hold, the answer keyed by Codex’s own id', async () => {
    const long = 'q'.repeat(5000);
    const raw = Array.from({ length: 12 }, (_, i) => ({ id: i === 0 ? long : `q${i}`, header: long, question: long, options: [{ label: '', description: 'no label' }, ...Array.from({ length: 12 }, () => ({ label: long, description: long }))] }));
    const { questions } = codexQuestions([null, 'x', { header: 'no id', question: 'q' }, { id: 'no-text', question: '' }, ...raw]);
    assert.equal(questions.length, QUESTION_LIMITS.questions);
    assert.ok(questions.every((q) => q.options.length === QUESTION_LIMITS.options && q.question.length === QUESTION_LIMITS.text && q.header.length === QUESTION_LIMITS.header));
    assert.ok(questions.every((q) => q.options.every((o) => o.label.length === QUESTION_LIMITS.label && o.description.length === QUESTION_LIMITS.text)));
    assert.equal(questions[0]!.id.length, QUESTION_LIMITS.text);
    assert.equal(questionEventPayload.safeParse({ request_id: '0', cli: 'codex', questions }).success, true, 'the host API accepts the question event');

    const h = harness({ questions: channel((request) => Promise.resolve({ kind: 'answered', answers: { [request.questions[0]!.id]: ['yes'], unknown: ['ignored'] } })) });
    h.feed([askLine(3, raw.slice(0, 1))]);
    await tick();
    assert.deepEqual(h.written.at(-1), { id: 3, result: { answers: { [long]: { answers: ['yes'] } } } });
  });

  it('refuses other server requests with a JSON-RPC error and a notice; garbage fails the run and closes stdin', () => {
    const h = harness();
    const events = h.feed([{ method: 'item/commandExecution/requestApproval', id: 5, params: { threadId: THREAD_ID } }]);
    assert.deepEqual(h.written.at(-1), { id: 5, error: { code: -32601, message: 'not supported by this host' } });
    assert.equal(events[0]!.type, 'notice');
    assert.equal(h.ended(), false);

    const bad = harness();
    const garbage = bad.feed(['', 'panicked at src/main.rs']);
    assert.deepEqual(garbage.map((e) => e.payload.kind), ['malformed_line']);
    assert.match(bad.run.failure ?? '', /not JSON-RPC: panicked at src\/main\.rs/);
    assert.equal(bad.ended(), true);
    assert.deepEqual(bad.server.line({ oversized: 2_000_000, head: '{"method":"item/completed","params":{' }).map((l) => l.kind === 'event' && l.payload.kind), ['oversized_line']);
  });

  it('a turn/completed line over the line limit still ends the turn (the last agent message is the answer), or fails it when none came', () => {
    const h = harness();
    h.feed([JSON.stringify({ method: 'item/completed', params: { item: { type: 'agentMessage', id: 'msg_1', text: 'the answer' } } })]);
    assert.equal(h.ended(), false);
    h.server.line({ oversized: 3_000_000, head: '{"method":"turn/completed","params":{"threadId":"t","turn":{"items":[' });
    assert.equal(h.run.result, 'the answer');
    assert.equal(h.ended(), true, 'stdin is closed, so the app-server exits');

    const none = harness();
    none.server.line({ oversized: 3_000_000, head: '{"method":"turn/completed","params":{' });
    assert.equal(none.run.result, undefined);
    assert.match(none.run.failure ?? '', /over the 1 MiB line limit/);
    assert.equal(none.ended(), true);
  });
});
