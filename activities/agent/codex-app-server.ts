/**
 * Codex CLI as `codex app-server` (docs/agent-drivers.md "Codex"): JSON-RPC over stdio, one JSON
 * object a line. `codex exec` cannot answer Codex's `request_user_input` tool; the app-server hands
 * it to its client as a server request, which this host answers through the turn's
 * {@link QuestionChannel}.
 *
 * The exchange of one turn: `initialize` → `initialized` + `thread/start` (or `thread/resume` of the
 * stored thread) → `turn/start` → notifications until `turn/completed` → stdin closed (the server
 * exits). Each step waits for the previous result; a JSON-RPC error, a line that is not JSON-RPC or
 * `turn/completed` ends stdin, so the server exits and nothing waits for it. Notifications are
 * normalized ({@link codexAppNotification}) into the event kinds of the other native streams, with the
 * same bounds. Questions are asked without blocking the stream; those still open when the run ends
 * are answered "no answer" ({@link CodexAppServer.settle}).
 */
import { QUESTION_LIMITS } from '../../lib/contracts/host-api';
import { cleanText } from '../../lib/text';
import { MAX_EVENT_TEXT_CHARS, NOTICE_EXCERPT_CHARS, type CliLine, type SplitLine } from './cli-lines';
import { boundedValue, isRecord, str, tailWithMarker } from './driver-text';
import { TOOL_RELAY_SERVER, generic, notice, retry, type NativeRun } from './native-lines';
import { StdinSession, type StdinSessionOptions } from './stdin-session';
import type { NativeQuestion, QuestionReply } from './types';

type Json = Record<string, unknown>;
type RpcId = string | number;

/** The start of a `turn/completed` notification (what an oversized line's head shows of it). */
const TURN_COMPLETED_HEAD = /^\s*\{\s*"method"\s*:\s*"turn\/completed"/;

const INITIALIZE = 1;
const THREAD = 2;
const TURN = 3;

/** Codex's reconnect notice: `Reconnecting... 2/5`. */
const CODEX_RECONNECT = /Reconnecting\.{3}\s*(\d+)\/(\d+)/;

/** Codex's request backoff (codex-rs: 200 ms × 2^(attempt−1), jittered ±10 %): the middle of its range. */
function codexBackoffMs(attempt: number): number {
  return Math.round(200 * 2 ** Math.min(attempt - 1, 20));
}

function failed(status: unknown): boolean {
  return status === 'failed' || status === 'declined';
}

function lastAgentMessage(items: unknown): string | undefined {
  if (!Array.isArray(items)) return undefined;
  const texts = items.filter((item): item is Json => isRecord(item) && item.type === 'agentMessage' && typeof item.text === 'string');
  return texts.length > 0 ? (texts[texts.length - 1]!.text as string) : undefined;
}

function codexAppItem(item: Json, completed: boolean, run: NativeRun): CliLine[] {
  const id = str(item.id) ?? 'item';
  switch (item.type) {
    case 'agentMessage': {
      if (!completed) return [];
      const text = str(item.text) ?? '';
      run.lastText = text;
      run.produced = true;
      return [generic({ type: 'assistant', text }, run)];
    }
    case 'commandExecution': {
      const use = { type: 'tool_use', id, name: 'shell', input: { command: item.command ?? '' } };
      run.produced = true;
      if (!completed) return [generic(use, run)];
      const out = run.toolNames.has(id) ? [] : [generic(use, run)];
      const exit = typeof item.exitCode === 'number' ? item.exitCode : undefined;
      out.push(generic({ type: 'tool_result', tool_use_id: id, output: str(item.aggregatedOutput) ?? '', is_error: failed(item.status) || (exit !== undefined && exit !== 0) }, run));
      return out;
    }
    case 'fileChange':
    case 'mcpToolCall':
    case 'webSearch': {
      if (!completed) return [];
      run.produced = true;
      if (item.type === 'mcpToolCall' && item.server === TOOL_RELAY_SERVER) return []; // the relay recorded it (native-lines.ts)
      const name = item.type === 'fileChange' ? 'apply_patch' : item.type === 'webSearch' ? 'web_search' : `${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`;
      const input = item.type === 'fileChange' ? { changes: item.changes ?? [] } : item.type === 'webSearch' ? { query: item.query ?? '' } : (item.arguments ?? {});
      const isError = failed(item.status) || (item.error !== undefined && item.error !== null);
      const output = item.type === 'mcpToolCall' ? JSON.stringify(boundedValue(item.result ?? item.error ?? '', MAX_EVENT_TEXT_CHARS)) : (str(item.status) ?? 'completed');
      return [generic({ type: 'tool_use', id, name, input }, run), generic({ type: 'tool_result', tool_use_id: id, output, is_error: isError }, run)];
    }
    default:
      return []; // user messages, reasoning, plans and other items the event log has no kind for
  }
}

/**
 * One app-server notification of the turn's thread, normalized: items become `message`,
 * `tool_use`, `tool_result`; `error` becomes `retry` (Codex retries) or a `notice`;
 * `turn/completed` sets the run's result or failure. Thread, account and streaming-delta
 * notifications are ignored. Pure; never throws on bad input.
 */
export function codexAppNotification(method: string, params: Json, run: NativeRun): CliLine[] {
  switch (method) {
    case 'item/started':
    case 'item/completed':
      return isRecord(params.item) ? codexAppItem(params.item, method === 'item/completed', run) : [];
    case 'error': {
      const error = isRecord(params.error) ? params.error : {};
      const message = str(error.message) ?? 'error';
      const details = str(error.additionalDetails);
      if (params.willRetry === true) {
        const reconnect = CODEX_RECONNECT.exec(message);
        const attempt = reconnect ? Number(reconnect[1]) : 1;
        return [retry(attempt, codexBackoffMs(attempt), details ? `${message}: ${details}` : message)];
      }
      run.failure = message.slice(0, 2000);
      return [notice('cli_notice', { message: message.slice(0, NOTICE_EXCERPT_CHARS) })];
    }
    case 'turn/completed': {
      const turn = isRecord(params.turn) ? params.turn : {};
      if (turn.status === 'completed') {
        run.turnMark = str(turn.id);
        run.result = run.lastText ?? lastAgentMessage(turn.items) ?? '';
      } else {
        const error = isRecord(turn.error) ? str(turn.error.message) : undefined;
        run.failure = (error ?? (turn.status === 'interrupted' ? 'the turn was interrupted' : 'the turn failed')).slice(0, 2000);
      }
      return [];
    }
    default:
      return [];
  }
}

function bounded(value: unknown, max: number): string {
  return cleanText((typeof value === 'string' ? value : '').slice(0, max));
}

/**
 * The questions of an `item/tool/requestUserInput` request, bounded by the question event's limits
 * (a question without id or text, an option without label, is dropped), with each normalized id
 * mapped to Codex's own (the answer must name Codex's id).
 */
export function codexQuestions(raw: unknown): { questions: NativeQuestion[]; ids: Map<string, string> } {
  const questions: NativeQuestion[] = [];
  const ids = new Map<string, string>();
  for (const q of Array.isArray(raw) ? raw : []) {
    if (questions.length >= QUESTION_LIMITS.questions) break;
    if (!isRecord(q) || typeof q.id !== 'string') continue;
    const id = bounded(q.id, QUESTION_LIMITS.text);
    const question = bounded(q.question, QUESTION_LIMITS.text);
    if (id === '' || question === '' || ids.has(id)) continue;
    ids.set(id, q.id);
    const options = (Array.isArray(q.options) ? q.options : []).filter(isRecord)
      .map((o) => ({ label: bounded(o.label, QUESTION_LIMITS.label), description: bounded(o.description, QUESTION_LIMITS.text) }))
      .filter((o) => o.label !== '')
      .slice(0, QUESTION_LIMITS.options);
    questions.push({ id, header: bounded(q.header, QUESTION_LIMITS.header), question, multi_select: false, options });
  }
  return { questions, ids };
}

/**
 * The `ToolRequestUserInputResponse` for a reply. A decline or a missing answer is said in text
 * (a JSON-RPC error would reach the model as an empty answer, without the reason).
 */
export function codexAnswers(ids: Map<string, string>, reply: QuestionReply): { answers: Record<string, { answers: string[] }> } {
  const answers: Record<string, { answers: string[] }> = {};
  for (const [id, codexId] of ids) {
    if (reply.kind === 'answered') {
      const given = reply.answers[id];
      if (Array.isArray(given)) answers[codexId] = { answers: given.filter((a) => typeof a === 'string') };
    } else {
      answers[codexId] = { answers: [reply.kind === 'declined' ? `(the owner declined to answer: ${reply.message})` : `(no answer: ${reply.message})`] };
    }
  }
  return { answers };
}

export interface CodexAppServerOptions extends StdinSessionOptions {
  model: string;
  prompt: string;
  /** The stored thread to resume; absent: a new thread. */
  resumeId?: string;
  /** A fork's first run: a new thread forked from `threadId` through turn `lastTurnId` (native-marks.ts); wins over `resumeId`. */
  fork?: { threadId: string; lastTurnId: string };
}

/** One turn's JSON-RPC client of `codex app-server`: fed stdout lines, writes to stdin. */
export class CodexAppServer extends StdinSession {
  private threadId: string | undefined;
  private completed = false;

  constructor(run: NativeRun, private readonly options: CodexAppServerOptions) {
    super(run, options);
  }

  /** The first stdin line: `initialize`. */
  override opening(): string {
    return `${JSON.stringify({ id: INITIALIZE, method: 'initialize', params: { clientInfo: { name: 'agent-control-plane', title: null, version: '1' }, capabilities: { experimentalApi: false } } })}\n`;
  }

  /** One stdout line: the events it makes; replies are written to stdin. */
  override line(split: SplitLine): CliLine[] {
    if ('oversized' in split) {
      // The turn's end must not be lost with its line (stdin would stay open until the deadline):
      // its answer is the last agent message seen, if any.
      if (TURN_COMPLETED_HEAD.test(split.head) && !this.completed) {
        this.completed = true;
        if (this.run.lastText !== undefined) this.run.result = this.run.lastText;
        else this.run.failure ??= 'Codex ended the turn with a line over the 1 MiB line limit, and no answer came before it';
        this.end();
      }
      return [notice('oversized_line', { length: split.oversized })];
    }
    const text = split.line.trim();
    if (text === '') return [];
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      msg = undefined;
    }
    if (!isRecord(msg) || (typeof msg.method !== 'string' && msg.id === undefined)) {
      this.fail(`the app-server wrote a line that is not JSON-RPC: ${text.slice(0, NOTICE_EXCERPT_CHARS)}`);
      return [notice('malformed_line', { problem: 'not a JSON-RPC message', excerpt: text.slice(0, NOTICE_EXCERPT_CHARS), length: text.length })];
    }
    const id = typeof msg.id === 'number' || typeof msg.id === 'string' ? msg.id : undefined;
    const params = isRecord(msg.params) ? msg.params : {};
    if (typeof msg.method === 'string' && id !== undefined) return this.request(id, msg.method, params);
    if (typeof msg.method === 'string') return this.notification(msg.method, params);
    if (id !== undefined) this.response(id, msg);
    return [];
  }

  /**
   * After the process ended: open questions are answered "no answer" (their wait is aborted) and
   * a run that never completed its turn gets a failure saying so.
   */
  override async settle(stderr = ''): Promise<void> {
    await super.settle();
    if (this.completed || this.run.result !== undefined || this.run.failure !== undefined) return;
    const tail = tailWithMarker(stderr.trim(), 1500);
    this.run.failure = `the app-server stopped before the turn completed${tail ? ` (stderr: ${tail})` : ''}`;
  }

  private send(message: Json): void {
    this.write(`${JSON.stringify(message)}\n`);
  }

  private fail(reason: string): void {
    if (this.run.failure === undefined) this.run.failure = reason.slice(0, 2000);
    this.end();
  }

  private response(id: RpcId, msg: Json): void {
    if (isRecord(msg.error)) {
      const message = str(msg.error.message) ?? 'error';
      const what = id === INITIALIZE ? 'initialize' : id === THREAD ? this.threadMethod() : id === TURN ? 'turn/start' : `request ${id}`;
      this.fail(`the app-server refused ${what}: ${message}`);
      return;
    }
    const result = isRecord(msg.result) ? msg.result : {};
    if (id === INITIALIZE) {
      this.send({ method: 'initialized' });
      const thread = { model: this.options.model, cwd: '/workspace', approvalPolicy: 'never', sandbox: 'danger-full-access' };
      const { fork, resumeId } = this.options;
      if (fork) this.send({ id: THREAD, method: 'thread/fork', params: { threadId: fork.threadId, lastTurnId: fork.lastTurnId, ...thread, excludeTurns: true } });
      else if (resumeId) this.send({ id: THREAD, method: 'thread/resume', params: { threadId: resumeId, ...thread, excludeTurns: true } });
      else this.send({ id: THREAD, method: 'thread/start', params: thread });
    } else if (id === THREAD) {
      const threadId = isRecord(result.thread) ? str(result.thread.id) : undefined;
      if (!threadId) {
        this.fail('the app-server started no thread');
        return;
      }
      this.threadId = threadId;
      this.run.sessionId = threadId;
      this.send({ id: TURN, method: 'turn/start', params: { threadId, input: [{ type: 'text', text: this.options.prompt, text_elements: [] }] } });
    }
  }

  private threadMethod(): string {
    return this.options.fork ? 'thread/fork' : this.options.resumeId ? 'thread/resume' : 'thread/start';
  }

  private notification(method: string, params: Json): CliLine[] {
    // Only the turn's own thread (sub-agents run threads of their own).
    if (this.threadId !== undefined && typeof params.threadId === 'string' && params.threadId !== this.threadId) return [];
    const lines = codexAppNotification(method, params, this.run);
    if (method === 'turn/completed') {
      this.completed = true;
      this.end();
    }
    return lines;
  }

  private request(id: RpcId, method: string, params: Json): CliLine[] {
    if (method !== 'item/tool/requestUserInput') {
      this.send({ id, error: { code: -32601, message: 'not supported by this host' } });
      return [notice('cli_notice', { message: `Codex asked for ${method.slice(0, 200)}, which this host does not support; it was refused.` })];
    }
    this.run.produced = true; // the model called a tool: a resumed session is alive
    const { questions, ids } = codexQuestions(params.questions);
    this.ask(questions.length > 0 ? { requestId: String(id), cli: 'codex', questions } : undefined, (reply) => this.send({ id, result: codexAnswers(ids, reply) }));
    return [];
  }
}
