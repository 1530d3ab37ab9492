/**
 * A chat completion presented as a messages-surface `message` (docs/inference-surfaces.md
 * "Messages surface"): reasoning → a `thinking` block, text → a `text` block, tool calls →
 * `tool_use` blocks with parsed `input`; `finish_reason` → `stop_reason`; usage counts cached
 * prompt tokens apart, as the messages API does.
 */
import type { ChatCompletion, ChatMessage } from '../../processors/types';
import type { Usage } from '../../surfaces/usage';

type Json = Record<string, unknown>;

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/**
 * The messages usage of a chat usage: `cache_read_input_tokens` = the cached prompt tokens (0 when
 * the upstream did not say), `input_tokens` = prompt tokens minus those; chat upstreams report no
 * cache writes, so `cache_creation_input_tokens` is 0.
 */
export function messagesUsage(usage: Usage | null | undefined): MessagesUsage {
  const prompt = num(usage?.prompt_tokens);
  const cached = Math.min(prompt, num(usage?.prompt_tokens_details?.cached_tokens ?? usage?.cached_tokens ?? usage?.cache_read_tokens));
  return { input_tokens: prompt - cached, output_tokens: num(usage?.completion_tokens), cache_read_input_tokens: cached, cache_creation_input_tokens: 0 };
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

export interface StopInfo {
  stop_reason: string;
  stop_sequence: string | null;
}

/**
 * `stop` → `end_turn` (or `stop_sequence` when the upstream names the matched one in the choice's
 * `stop_reason`, as vLLM-style engines do, and it is one the client asked for), `length` →
 * `max_tokens`, `tool_calls`/`function_call` (or any finish with tool calls) → `tool_use`,
 * `content_filter` → `refusal`; anything else or none → `end_turn`.
 */
export function stopInfo(finish: string | null | undefined, matched: unknown, stopSequences: readonly string[] | undefined, hadToolCalls: boolean): StopInfo {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (hadToolCalls || finish === 'tool_calls' || finish === 'function_call') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (typeof matched === 'string' && stopSequences?.includes(matched)) return { stop_reason: 'stop_sequence', stop_sequence: matched };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * A tool call's `arguments` as the `input` object: empty → `{}`; a JSON object → itself; anything
 * else (invalid JSON, an array, a scalar) is kept whole as `{"_raw_arguments": "<text>"}` so the
 * client sees what the model produced instead of an invented value.
 */
export function toolInput(args: string | undefined): Json {
  if (args === undefined || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Json;
  } catch {
    // kept raw below
  }
  return { _raw_arguments: args };
}

/** The message id for a chat completion id. */
export function messageId(chatId: string | undefined): string {
  return `msg_${chatId && chatId.length > 0 ? chatId : 'gateway'}`;
}

export interface MessageContext {
  /** The model name as the client sent it (echoed back). */
  model: string;
  stopSequences: readonly string[] | undefined;
}

/** The `message` object for a non-streaming chat completion. */
export function chatToMessage(body: ChatCompletion & { usage?: Usage }, context: MessageContext): Json {
  const choice = body.choices[0];
  const message: ChatMessage & { reasoning?: unknown } = choice?.message ?? {};
  const content: Json[] = [];
  const reasoning = message.reasoning_content ?? (typeof message.reasoning === 'string' ? message.reasoning : undefined);
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (message.content) content.push({ type: 'text', text: message.content });
  const calls = message.tool_calls ?? [];
  for (const call of calls) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInput(call.function.arguments) });
  const stop = stopInfo(choice?.finish_reason, (choice as { stop_reason?: unknown } | undefined)?.stop_reason, context.stopSequences, calls.length > 0);
  return {
    id: messageId(body.id), type: 'message', role: 'assistant', model: context.model, content,
    stop_reason: stop.stop_reason, stop_sequence: stop.stop_sequence, usage: messagesUsage(body.usage),
  };
}
