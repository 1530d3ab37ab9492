/**
 * Claude Code's control protocol on stdin/stdout (`--input-format stream-json
 * --permission-prompt-tool stdio`; docs/agent-drivers.md "Native questions"), the part the driver
 * speaks: the prompt as a user line, and the answer to a `control_request`. `AskUserQuestion`
 * reaches the host as `can_use_tool`; its answer is `allow` with the questions echoed back and the
 * answers keyed by question text (multiple choices joined with ", "), or `deny` with a message the
 * model reads. Any other tool is allowed unchanged (the CLI runs with every permission anyway); any
 * other request gets an error response. The line builders are pure and never throw on bad input;
 * {@link ClaudeStreamJson} is one run's session.
 */
import { QUESTION_LIMITS } from '../../lib/contracts/host-api';
import type { CliLine, SplitLine } from './cli-lines';
import { isRecord } from './driver-text';
import { claudeLine, type NativeRun } from './native-lines';
import { StdinSession, type StdinSessionOptions } from './stdin-session';
import type { NativeQuestion, QuestionReply } from './types';

type Json = Record<string, unknown>;

function cut(value: unknown, max: number): string {
  return typeof value === 'string' ? value.slice(0, max) : '';
}

/** The first stdin line: the turn's prompt as a user message. */
export function claudePromptLine(prompt: string): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: prompt }, parent_tool_use_id: null, session_id: '' })}\n`;
}

/** A control request the CLI wrote: its id, and the question when it is one. */
export type ClaudeControl =
  | { kind: 'question'; requestId: string; input: Json; questions: NativeQuestion[] }
  | { kind: 'tool'; requestId: string; input: Json }
  | { kind: 'other'; requestId: string; subtype: string };

/** A parsed stdout line that is a `control_request`, or `undefined`. */
export function claudeControlRequest(obj: Json): ClaudeControl | undefined {
  if (obj.type !== 'control_request' || typeof obj.request_id !== 'string' || obj.request_id === '' || obj.request_id.length > QUESTION_LIMITS.requestId) return undefined;
  const requestId = obj.request_id;
  const request = isRecord(obj.request) ? obj.request : {};
  const input = isRecord(request.input) ? request.input : {};
  if (request.subtype !== 'can_use_tool') return { kind: 'other', requestId, subtype: cut(request.subtype, 100) || 'unknown' };
  if (request.tool_name !== 'AskUserQuestion') return { kind: 'tool', requestId, input };
  return { kind: 'question', requestId, input, questions: claudeQuestions(input) };
}

/** `AskUserQuestion`'s questions, bounded; a question's id is its text (the key of its answer). */
export function claudeQuestions(input: Json): NativeQuestion[] {
  const out: NativeQuestion[] = [];
  const seen = new Set<string>();
  for (const q of Array.isArray(input.questions) ? input.questions : []) {
    if (out.length >= QUESTION_LIMITS.questions) break;
    if (!isRecord(q) || typeof q.question !== 'string' || q.question === '' || q.question.length > QUESTION_LIMITS.text || seen.has(q.question)) continue;
    seen.add(q.question);
    const options = (Array.isArray(q.options) ? q.options : [])
      .filter(isRecord)
      .map((o) => ({ label: cut(o.label, QUESTION_LIMITS.label), description: cut(o.description, QUESTION_LIMITS.text) }))
      .filter((o) => o.label !== '')
      .slice(0, QUESTION_LIMITS.options);
    out.push({ id: q.question, header: cut(q.header, QUESTION_LIMITS.header), question: q.question, multi_select: q.multiSelect === true, options });
  }
  return out;
}

function response(requestId: string, body: Json): string {
  return `${JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: requestId, response: body } })}\n`;
}

/** The stdin line answering a question request with the owner's reply. */
export function claudeQuestionResponse(control: { requestId: string; input: Json }, reply: QuestionReply): string {
  if (reply.kind !== 'answered') return response(control.requestId, { behavior: 'deny', message: reply.message });
  const answers: Record<string, string> = {};
  for (const [id, values] of Object.entries(reply.answers)) answers[id] = values.join(', ');
  return response(control.requestId, { behavior: 'allow', updatedInput: { ...control.input, answers } });
}

/** The stdin line allowing another tool unchanged. */
export function claudeAllowResponse(control: { requestId: string; input: Json }): string {
  return response(control.requestId, { behavior: 'allow', updatedInput: control.input });
}

/** The stdin line refusing a control request this host does not serve. */
export function claudeErrorResponse(requestId: string, message: string): string {
  return `${JSON.stringify({ type: 'control_response', response: { subtype: 'error', request_id: requestId, error: message } })}\n`;
}

/**
 * One Claude Code run in stream-json mode: the prompt line first, stdout normalized as the stream
 * (native-lines.ts `claudeLine`), control requests answered on stdin (a question once the owner
 * replies), and stdin closed at the `result` line (after it the CLI would wait for more input).
 */
export class ClaudeStreamJson extends StdinSession {
  constructor(run: NativeRun, private readonly options: StdinSessionOptions & { prompt: string }) {
    super(run, options);
  }

  override opening(): string {
    return claudePromptLine(this.options.prompt);
  }

  override line(split: SplitLine): CliLine[] {
    if ('line' in split && split.line.includes('"control_request"')) {
      const control = parseControl(split.line);
      if (control) {
        this.answer(control);
        return [];
      }
    }
    const lines = claudeLine(split, this.run);
    if (this.run.result !== undefined || this.run.failure !== undefined) this.end();
    return lines;
  }

  private answer(control: ClaudeControl): void {
    if (control.kind === 'tool') this.write(claudeAllowResponse(control));
    else if (control.kind === 'other') this.write(claudeErrorResponse(control.requestId, `${control.subtype} is not supported by this host`));
    else {
      this.run.produced = true; // the model called a tool: a resumed session is alive
      const request = control.questions.length > 0 ? { requestId: control.requestId, cli: 'claude-code' as const, questions: control.questions } : undefined;
      this.ask(request, (reply) => this.write(claudeQuestionResponse(control, reply)));
    }
  }
}

function parseControl(line: string): ClaudeControl | undefined {
  try {
    const obj: unknown = JSON.parse(line);
    return isRecord(obj) ? claudeControlRequest(obj) : undefined;
  } catch {
    return undefined;
  }
}
