/**
 * Claude Code's control protocol as the driver speaks it (activities/agent/claude-control.ts), on
 * the lines the real CLI 2.1.332 wrote (docs/agent-drivers.md "Native questions").
 */
import assert from 'node:assert/strict';
import {
  ClaudeStreamJson, claudeAllowResponse, claudeControlRequest, claudeErrorResponse, claudePromptLine, claudeQuestionResponse, claudeQuestions,
} from '../../../activities/agent/claude-control';
import { newNativeRun } from '../../../activities/agent/native-lines';
import type { QuestionRequest } from '../../../activities/agent/types';

type Json = Record<string, unknown>;

// As Claude Code 2.1.332 printed it (trimmed of fields the driver does not read).
const ASK = JSON.parse(`{"type":"control_request","request_id":"2eb776dd-5cce-4edb-8e2b-57ab13d5c735","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","display_name":"AskUserQuestion","input":{"questions":[{"question":"Which database should the service use?","header":"Database","options":[{"label":"Postgres","description":"Relational, already deployed"},{"label":"SQLite","description":"Embedded, simplest"}],"multiSelect":false}]},"tool_use_id":"toolu_ask_1","requires_user_interaction":true}}`) as Json;

describe('Claude Code control protocol', () => {
  it('the prompt is one stream-json user line', () => {
    const line = claudePromptLine('fix "it"\nplease');
    assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'));
    assert.deepEqual(JSON.parse(line), { type: 'user', message: { role: 'user', content: 'fix "it"\nplease' }, parent_tool_use_id: null, session_id: '' });
  });

  it('reads an AskUserQuestion request as a question whose id is its text', () => {
    const control = claudeControlRequest(ASK);
    assert.equal(control?.kind, 'question');
    assert.deepEqual(control.kind === 'question' ? control.questions : undefined, [{
      id: 'Which database should the service use?', header: 'Database', question: 'Which database should the service use?', multi_select: false,
      options: [{ label: 'Postgres', description: 'Relational, already deployed' }, { label: 'SQLite', description: 'Embedded, simplest' }],
    }]);
  });

  it('answers with the questions echoed back and the answers keyed by question text, choices joined', () => {
    const control = claudeControlRequest(ASK)!;
    assert.equal(control.kind, 'question');
    if (control.kind !== 'question') return;
    const line = claudeQuestionResponse(control, { kind: 'answered', answers: { 'Which database should the service use?': ['SQLite', 'Postgres'] } });
    assert.deepEqual(JSON.parse(line), {
      type: 'control_response',
      response: {
        subtype: 'success', request_id: '2eb776dd-5cce-4edb-8e2b-57ab13d5c735',
        response: { behavior: 'allow', updatedInput: { questions: (ASK.request as { input: Json }).input.questions, answers: { 'Which database should the service use?': 'SQLite, Postgres' } } },
      },
    });
    for (const reply of [{ kind: 'declined', message: 'No.' }, { kind: 'unanswered', message: 'Too late.' }] as const) {
      assert.deepEqual((JSON.parse(claudeQuestionResponse(control, reply)) as { response: { response: unknown } }).response.response, { behavior: 'deny', message: reply.message });
    }
  });

  it('allows another tool unchanged and refuses other requests; ignores what is not a control request', () => {
    const tool = claudeControlRequest({ type: 'control_request', request_id: 'r2', request: { subtype: 'can_use_tool', tool_name: 'Bash', input: { command: 'ls' } } });
    assert.deepEqual(tool, { kind: 'tool', requestId: 'r2', input: { command: 'ls' } });
    assert.deepEqual((JSON.parse(claudeAllowResponse(tool as { requestId: string; input: Json })) as { response: { response: unknown } }).response.response, { behavior: 'allow', updatedInput: { command: 'ls' } });
    assert.deepEqual(claudeControlRequest({ type: 'control_request', request_id: 'r3', request: { subtype: 'mcp_message' } }), { kind: 'other', requestId: 'r3', subtype: 'mcp_message' });
    assert.deepEqual(JSON.parse(claudeErrorResponse('r3', 'no')), { type: 'control_response', response: { subtype: 'error', request_id: 'r3', error: 'no' } });
    for (const obj of [{ type: 'assistant' }, { type: 'control_request' }, { type: 'control_request', request_id: 7 }, { type: 'control_request', request_id: 'x'.repeat(201) }]) {
      assert.equal(claudeControlRequest(obj), undefined, JSON.stringify(obj).slice(0, 80));
    }
  });

  it('bounds what the CLI sent: at most 8 questions and 8 options, long text cut, bad entries and repeats dropped', () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ question: `Q${i}?`, header: 'h'.repeat(300), multiSelect: i === 1, options: Array.from({ length: 10 }, (__, k) => ({ label: `L${k}`, description: 'd'.repeat(5000) })) }));
    const questions = claudeQuestions({ questions: [{ question: '' }, 'junk', { question: 'x'.repeat(4001) }, many[0], ...many] });
    assert.equal(questions.length, 8);
    assert.deepEqual(questions.map((q) => q.id), ['Q0?', 'Q1?', 'Q2?', 'Q3?', 'Q4?', 'Q5?', 'Q6?', 'Q7?'], 'the repeat of Q0 is dropped');
    assert.equal(questions[1]!.multi_select, true);
    assert.equal(questions[0]!.header.length, 200);
    assert.equal(questions[0]!.options.length, 8);
    assert.equal(questions[0]!.options[0]!.description.length, 4000);
    assert.deepEqual(claudeQuestions({ questions: 'no' }), []);
    assert.deepEqual(claudeQuestions({}), []);
  });

  it('a run: the prompt first, a question asked without holding the stream, its answer written back, stdin closed at the result', async () => {
    const asked: QuestionRequest[] = [];
    let release: () => void = () => undefined;
    const questions = { ask: async (request: QuestionRequest) => {
      asked.push(request);
      await new Promise<void>((resolve) => { release = resolve; });
      return { kind: 'answered' as const, answers: { [request.questions[0]!.id]: ['SQLite'] } };
    } };
    const run = newNativeRun();
    const session = new ClaudeStreamJson(run, { prompt: 'Ask me.', signal: new AbortController().signal, questions });
    const written: string[] = [];
    let ended = false;
    assert.deepEqual(JSON.parse(session.opening()), JSON.parse(claudePromptLine('Ask me.')));
    session.open({ write: (text) => written.push(text), end: () => { ended = true; } });

    assert.deepEqual(session.line({ line: JSON.stringify(ASK) }), [], 'a control request is no event');
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.cli, 'claude-code');
    const tool = session.line({ line: JSON.stringify({ type: 'control_request', request_id: 'r-bash', request: { subtype: 'can_use_tool', tool_name: 'Bash', input: { command: 'ls' } } }) });
    assert.deepEqual(tool, []);
    assert.equal(written.length, 1, 'another tool is allowed while the question waits');
    release();
    await session.settle();
    assert.equal(written.length, 2);
    const answer = JSON.parse(written[1]!) as { response: { request_id: string; response: { behavior: string; updatedInput: { answers: Json } } } };
    assert.equal(answer.response.request_id, ASK.request_id);
    assert.deepEqual(answer.response.response.updatedInput.answers, { 'Which database should the service use?': 'SQLite' });
    assert.equal(ended, false);
    session.line({ line: JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'done', session_id: 's-1' }) });
    assert.equal(run.result, 'done');
    assert.equal(ended, true, 'stdin closes at the result, so the CLI exits');
  });

  it('a question still open when the run ends is answered "no answer"; without a channel it is answered at once', async () => {
    const never = { ask: (_request: QuestionRequest, signal: AbortSignal) => new Promise<never>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) };
    const open = new ClaudeStreamJson(newNativeRun(), { prompt: 'p', signal: new AbortController().signal, questions: never });
    const written: string[] = [];
    open.open({ write: (text) => written.push(text), end: () => undefined });
    open.line({ line: JSON.stringify(ASK) });
    await open.settle();
    assert.equal((JSON.parse(written[0]!) as { response: { response: { behavior: string } } }).response.response.behavior, 'deny');

    const alone = new ClaudeStreamJson(newNativeRun(), { prompt: 'p', signal: new AbortController().signal });
    const out: string[] = [];
    alone.line({ line: JSON.stringify(ASK) }); // before stdin opens: queued
    alone.open({ write: (text) => out.push(text), end: () => undefined });
    await alone.settle();
    assert.match(out.join(''), /Questions cannot be answered in this run/);
  });
});
