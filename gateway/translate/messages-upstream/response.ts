/**
 * Messages-API response → chat completion: text blocks → `content`, `tool_use` → `tool_calls`
 * (arguments = the JSON text of `input`), `thinking` → `reasoning_content`, `stop_reason` →
 * `finish_reason`, usage → chat usage that keeps the cache counts the request log prices
 * (`prompt_tokens` counts cache reads and writes, as chat usage does).
 */
import type { ChatCompletion, ToolCall } from '../../processors/types';
import type { Usage } from '../../surfaces/usage';

/** Chat usage with its counts always present. */
export type ChatUsage = Usage & { prompt_tokens: number; completion_tokens: number; total_tokens: number };

/** The usage object of a messages-API response or stream event. */
export interface MessagesUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** A messages-API response body (the fields read here). */
export interface MessagesResponse {
  id?: string;
  model?: string;
  content?: Array<{ type?: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown }>;
  stop_reason?: string | null;
  usage?: MessagesUsage;
}

const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter',
};

/** The chat `finish_reason` of a messages-API `stop_reason` (`null` while unknown). */
export function finishReasonOf(stopReason: string | null | undefined): string | null {
  if (stopReason === null || stopReason === undefined) return null;
  return FINISH_REASONS[stopReason] ?? 'stop';
}

function count(value: number | null | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * Chat usage of messages-API usage: `prompt_tokens` = input + cache reads + cache writes,
 * `prompt_tokens_details.cached_tokens` = cache reads, `completion_tokens` = output; the upstream's
 * `cache_read_input_tokens` / `cache_creation_input_tokens` are kept (cache writes are priced from them).
 */
export function chatUsageOf(usage: MessagesUsage): ChatUsage {
  const cacheRead = count(usage.cache_read_input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens);
  const prompt = count(usage.input_tokens) + cacheRead + cacheWrite;
  const completion = count(usage.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
    cache_read_input_tokens: cacheRead,
    cache_creation_input_tokens: cacheWrite,
  };
}

/** The chat completion of a messages-API response. */
export function chatCompletionOf(response: MessagesResponse, createdSeconds = Math.floor(Date.now() / 1000)): ChatCompletion & { usage?: ChatUsage } {
  let text = '';
  let reasoning = '';
  const calls: ToolCall[] = [];
  for (const block of response.content ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') reasoning += block.thinking;
    else if (block.type === 'tool_use') {
      calls.push({ id: block.id ?? `call_${calls.length}`, type: 'function', function: { name: block.name ?? '', arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  const completion: ChatCompletion & { usage?: ChatUsage } = {
    id: response.id ?? 'msg',
    object: 'chat.completion',
    created: createdSeconds,
    model: response.model ?? '',
    choices: [{ index: 0, message, finish_reason: finishReasonOf(response.stop_reason), logprobs: null }],
  };
  if (response.usage) completion.usage = chatUsageOf(response.usage);
  return completion;
}
