/**
 * The built-in driver's model call: one non-streaming `POST ${gatewayUrl}/v1/chat/completions`
 * with the turn's grant as bearer, retried per the native CLI retry policy (retry-policy.ts) on
 * 429, 5xx and connection errors (each retry is a `retry` event). Other 4xx fail the turn with a
 * message safe to show (the grant token is never part of it).
 */
import { randomUUID } from 'node:crypto';
import { type DriverInput } from './types';
import { redactSecret, truncateWithMarker } from './driver-text';
import { abortableSleep, DriverAbortedError, parseRetryAfterSeconds, retryDecision } from './retry-policy';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** OpenAI chat message as kept in the native session. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: unknown[];
}

/** Thrown when the turn's deadline passes during a model call. */
export class TurnTimeLimitError extends Error {
  constructor() {
    super('The turn reached its time limit.');
    this.name = 'TurnTimeLimitError';
  }
}

type CallOutcome =
  | { kind: 'ok'; message: ChatMessage }
  | { kind: 'retryable'; status: number | null; reason: string; retryAfter?: string };

const ERROR_TEXT_CHARS = 300;

/** Calls the model until it answers, retrying transient failures; returns the assistant message. */
export async function completeChat(input: DriverInput, request: ChatRequest): Promise<ChatMessage> {
  const sleep = input.sleep ?? abortableSleep;
  const random = input.random ?? Math.random;
  for (let attempt = 1; ; attempt += 1) {
    const outcome = await callOnce(input, request);
    if (outcome.kind === 'ok') return outcome.message;
    const decision = retryDecision({ attempt, retryAfter: outcome.retryAfter, now: Date.now(), deadline: input.deadline, random });
    if (!decision.retry) {
      throw new Error(`The model gateway kept failing (${outcome.reason}); ${decision.reason}.`);
    }
    await input.events.emit('retry', {
      attempt, wait_ms: decision.waitMs, status: outcome.status, reason: outcome.reason,
      ...retryAfterField(outcome.retryAfter),
    });
    await sleep(decision.waitMs, input.signal);
    if (input.signal.aborted) throw new DriverAbortedError();
  }
}

async function callOnce(input: DriverInput, request: ChatRequest): Promise<CallOutcome> {
  if (input.signal.aborted) throw new DriverAbortedError();
  const remaining = input.deadline - Date.now();
  if (remaining <= 0) throw new TurnTimeLimitError();
  const timeout = AbortSignal.timeout(remaining);
  const signal = AbortSignal.any([input.signal, timeout]);
  const url = `${input.gatewayUrl.replace(/\/+$/, '')}/v1/chat/completions`;
  const body = JSON.stringify({ model: input.model, messages: request.messages, tools: request.tools, stream: false });
  let status: number;
  let text: string;
  let retryAfter: string | undefined;
  try {
    const res = await fetch(url, {
      method: 'POST', signal, body,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${input.grantToken}` },
    });
    status = res.status;
    retryAfter = res.headers.get('retry-after') ?? undefined;
    text = await res.text();
  } catch (err) {
    if (input.signal.aborted) throw new DriverAbortedError();
    if (timeout.aborted) throw new TurnTimeLimitError();
    return { kind: 'retryable', status: null, reason: `connection error: ${connectionErrorText(err)}` };
  }
  return interpret(input, status, text, retryAfter);
}

function interpret(input: DriverInput, status: number, text: string, retryAfter: string | undefined): CallOutcome {
  if (status >= 200 && status < 300) {
    const message = assistantMessage(text);
    if (!message) throw new Error(`The model gateway returned an unreadable answer (HTTP ${status}).`);
    return { kind: 'ok', message };
  }
  const detail = redactSecret(truncateWithMarker(errorMessage(text), ERROR_TEXT_CHARS), input.grantToken);
  if (status === 429 || status === 408 || status >= 500) {
    return { kind: 'retryable', status, reason: `HTTP ${status}: ${detail}`, ...(retryAfter !== undefined ? { retryAfter } : {}) };
  }
  throw new Error(`The model gateway refused the request (HTTP ${status}): ${detail}`);
}

function assistantMessage(text: string): ChatMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const choices = (parsed as { choices?: unknown } | null)?.choices;
  const message = Array.isArray(choices) ? (choices[0] as { message?: unknown } | undefined)?.message : undefined;
  if (typeof message !== 'object' || message === null) return undefined;
  const raw = message as { content?: unknown; tool_calls?: unknown };
  const content = typeof raw.content === 'string' ? raw.content : null;
  const toolCalls = Array.isArray(raw.tool_calls) ? raw.tool_calls.map(toToolCall).filter((c): c is ToolCall => c !== undefined) : [];
  return { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
}

function toToolCall(value: unknown): ToolCall | undefined {
  const raw = value as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
  if (typeof raw?.function?.name !== 'string') return undefined;
  const id = typeof raw.id === 'string' && raw.id !== '' ? raw.id : `call_${randomUUID()}`;
  const args = typeof raw.function.arguments === 'string' ? raw.function.arguments : JSON.stringify(raw.function.arguments ?? {});
  return { id, type: 'function', function: { name: raw.function.name, arguments: args } };
}

function retryAfterField(value: string | undefined): { retry_after?: number } {
  const seconds = parseRetryAfterSeconds(value);
  return seconds === undefined ? {} : { retry_after: seconds };
}

function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown }; message?: unknown };
    const message = parsed.error?.message ?? parsed.message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: quote the text itself
  }
  return text.trim() || 'no details';
}

function connectionErrorText(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : 'unknown';
}
