/**
 * Chat-completions request → messages-API request, for routes of a message-format kind. Built in
 * one pass over the client's keys into one new object (the client's is never mutated), under the
 * same rules as the chat wire body: `extra_body` first, optional parameters only when the route
 * lists them in `supported_params`, `tools`/`tool_choice` only on `supports_tools` routes. Bad
 * input is a 400 naming the field. The table is in docs/adapters.md.
 */
import { AppError } from '../../../lib/errors';
import type { MessagesDialect } from '../../adapters/kinds';
import { checkedReasoningEffort, clampTokens } from '../../adapters/params';
import type { WireRoute } from '../../adapters/wire-body';
import { messagesOf } from './request-messages';

const DEFAULT_PARAMS: readonly string[] = ['temperature', 'top_p', 'max_tokens'];
/** Thinking budget for an accepted `reasoning_effort` (at most `max_tokens - 1`; none below the 1024 minimum). */
const THINKING_BUDGET: Readonly<Record<string, number>> = { minimal: 1024, low: 1024, medium: 4096, high: 16384 };
const MIN_THINKING_BUDGET = 1024;

function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid '${param}': ${message}`, { param });
}

interface Collected {
  maxTokens: number | undefined;
  effort: unknown;
}

/** The messages-API body of a chat request; `dialect` says whether `model` or `anthropic_version` go in it. */
export function buildMessagesBody(
  route: WireRoute,
  client: Readonly<Record<string, unknown>>,
  stream: boolean,
  dialect: MessagesDialect,
): Record<string, unknown> {
  const body: Record<string, unknown> = route.extraBody === undefined ? {} : { ...route.extraBody };
  const supported = route.supportedParams ?? DEFAULT_PARAMS;
  const collected: Collected = { maxTokens: undefined, effort: undefined };
  for (const key of Object.keys(client)) {
    const value = client[key];
    if (value !== undefined && value !== null) forwardField(body, key, value, route, supported, collected);
  }
  const maxTokens = collected.maxTokens ?? route.maxOutputLength;
  body.max_tokens = maxTokens;
  if (collected.effort !== undefined) setThinking(body, collected.effort, maxTokens);
  if (dialect.path === 'raw_predict') delete body.model;
  else body.model = route.providerModelId;
  if (dialect.version.in === 'body') body.anthropic_version = dialect.version.value;
  body.stream = stream;
  return body;
}

function forwardField(
  body: Record<string, unknown>,
  key: string,
  value: unknown,
  route: WireRoute,
  supported: readonly string[],
  collected: Collected,
): void {
  switch (key) {
    case 'messages': {
      const { system, messages } = messagesOf(value);
      if (system !== undefined) body.system = system;
      body.messages = messages;
      return;
    }
    case 'tools':
      if (route.supportsTools) body.tools = toolsOf(value);
      return;
    case 'tool_choice':
      if (route.supportsTools) setToolChoice(body, value);
      return;
    case 'max_tokens':
    case 'max_completion_tokens':
      if (supported.includes(key)) {
        const clamped = clampTokens(key, value, route.maxOutputLength) as number;
        collected.maxTokens = collected.maxTokens === undefined ? clamped : Math.min(collected.maxTokens, clamped);
      }
      return;
    case 'reasoning_effort':
      collected.effort = checkedReasoningEffort(value, route.reasoningEfforts, supported);
      return;
    case 'stop':
      if (supported.includes('stop')) body.stop_sequences = stopSequences(value);
      return;
    case 'user':
      if (supported.includes('user')) {
        if (typeof value !== 'string') throw invalid('user', 'expected a string');
        body.metadata = { user_id: value };
      }
      return;
    case 'temperature':
    case 'top_p':
      if (supported.includes(key)) body[key] = value;
      return;
    default:
      // Chat-only parameters (n, seed, logprobs, response_format, …) have no messages-API field.
  }
}

function stopSequences(value: unknown): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw invalid('stop', 'expected a string or a list of strings');
  return list;
}

function setThinking(body: Record<string, unknown>, effort: unknown, maxTokens: number): void {
  const budget = Math.min(THINKING_BUDGET[String(effort)] ?? 4096, maxTokens - 1);
  if (budget >= MIN_THINKING_BUDGET) body.thinking = { type: 'enabled', budget_tokens: budget };
}

/** Function tools → `{name, description, input_schema}`; other tool types are a 400. */
function toolsOf(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw invalid('tools', 'expected a list');
  return value.map((tool: unknown, i) => {
    const t = tool as { type?: unknown; function?: { name?: unknown; description?: unknown; parameters?: unknown } } | null;
    if (t === null || typeof t !== 'object' || t.type !== 'function' || typeof t.function?.name !== 'string') {
      throw invalid(`tools[${i}]`, 'only function tools with a name are supported');
    }
    const fn = t.function;
    const out: Record<string, unknown> = { name: fn.name, input_schema: fn.parameters ?? { type: 'object', properties: {} } };
    if (typeof fn.description === 'string') out.description = fn.description;
    return out;
  });
}

/** `auto`/`required`/`none`/a named function → the messages API's `{type: auto|any|none|tool}`. */
function setToolChoice(body: Record<string, unknown>, value: unknown): void {
  if (value === 'auto') body.tool_choice = { type: 'auto' };
  else if (value === 'required') body.tool_choice = { type: 'any' };
  else if (value === 'none') body.tool_choice = { type: 'none' };
  else {
    const named = value as { type?: unknown; function?: { name?: unknown } } | null;
    if (named === null || typeof named !== 'object' || named.type !== 'function' || typeof named.function?.name !== 'string') {
      throw invalid('tool_choice', 'expected auto, required, none or {type: "function", function: {name}}');
    }
    body.tool_choice = { type: 'tool', name: named.function.name };
  }
}
