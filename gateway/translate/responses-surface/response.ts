/**
 * Chat completions → Responses-API output (docs/inference-surfaces.md "`POST /v1/responses`"):
 * the `response` object, its usage, and the output items, in the order reasoning, message, tool
 * calls. A chat tool call maps back through the request's {@link ToolNames}: a function (with its
 * `namespace`) → `function_call`, a freeform tool → `custom_tool_call` whose `input` is the
 * call's `input` argument (the raw arguments when they are not `{"input": "<string>"}`).
 */
import { randomUUID } from 'node:crypto';
import type { ChatCompletion, ChatMessage, ToolCall } from '../../processors/types';
import type { Usage } from '../../surfaces/usage';
import type { ToolNames } from './tools';

type Json = Record<string, unknown>;

/** What a response echoes of its request, and the ids of its items. */
export interface ResponseContext {
  /** The model as the client named it. */
  model: string;
  names: ToolNames;
  /** Base of the response and item ids (`resp_<base>`, `msg_<base>`, …). */
  base: string;
  createdAt: number;
}

/** A fresh context: ids are the gateway's own (upstream chat ids are not unique across calls). */
export function responseContext(model: string, names: ToolNames): ResponseContext {
  return { model, names, base: randomUUID().replace(/-/g, ''), createdAt: Math.floor(Date.now() / 1000) };
}

/** `usage` in the Responses shape (`null` when the upstream reported none). */
export function responseUsage(usage: Usage | undefined | null): Json | null {
  if (!usage) return null;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  const reasoning = (usage.completion_tokens_details as { reasoning_tokens?: unknown } | undefined)?.reasoning_tokens;
  return {
    input_tokens: input, input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: output, output_tokens_details: { reasoning_tokens: typeof reasoning === 'number' ? reasoning : 0 },
    total_tokens: usage.total_tokens ?? input + output,
  };
}

/** How a response ended: `completed`, or `incomplete` when the upstream stopped at its token limit. */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export function statusOf(finishReason: string | null | undefined): ResponseStatus {
  return finishReason === 'length' ? 'incomplete' : 'completed';
}

/** The `response` object. */
export function responseObject(context: ResponseContext, status: ResponseStatus, output: Json[], usage: Usage | undefined | null, error?: Json): Json {
  return {
    id: `resp_${context.base}`, object: 'response', created_at: context.createdAt, status, model: context.model, output,
    usage: status === 'in_progress' ? null : responseUsage(usage), error: error ?? null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    parallel_tool_calls: true, tool_choice: 'auto', tools: [], text: { format: { type: 'text' } },
  };
}

export function messageItem(id: string, text: string, status: 'in_progress' | 'completed'): Json {
  return { type: 'message', id, status, role: 'assistant', content: status === 'completed' ? [{ type: 'output_text', text, annotations: [] }] : [] };
}

export function reasoningItem(id: string, text: string | undefined): Json {
  return { type: 'reasoning', id, summary: text === undefined ? [] : [{ type: 'summary_text', text }] };
}

/** The `input` of a freeform tool's call: its `input` argument, else the arguments as they are. */
export function customInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as Json).input === 'string') return (parsed as Json).input as string;
  } catch {
    // not JSON: the model wrote the input itself
  }
  return args;
}

/** A tool call's output item; `status` and the argument text as given. */
export function toolCallItem(context: ResponseContext, index: number, call: { id: string; name: string; arguments: string }, status: 'in_progress' | 'completed'): Json {
  const tool = context.names.offered(call.name);
  const callId = call.id || `call_${context.base}_${index}`;
  if (tool.type === 'custom') {
    return { type: 'custom_tool_call', id: `ctc_${context.base}_${index}`, status, call_id: callId, name: tool.name, input: status === 'completed' ? customInput(call.arguments) : '' };
  }
  return {
    type: 'function_call', id: `fc_${context.base}_${index}`, status, call_id: callId, name: tool.name,
    ...(tool.namespace === undefined ? {} : { namespace: tool.namespace }), arguments: status === 'completed' ? call.arguments : '',
  };
}

/** The non-streaming answer: the `response` object with `output_text`. */
export function chatToResponse(body: ChatCompletion & { usage?: Usage }, context: ResponseContext): Json {
  const choice = body.choices[0];
  const message: (ChatMessage & { reasoning?: string | null }) | undefined = choice?.message;
  const output: Json[] = [];
  const reasoning = message?.reasoning_content ?? message?.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '') output.push(reasoningItem(`rs_${context.base}`, reasoning));
  const text = message?.content ?? '';
  if (text !== '') output.push(messageItem(`msg_${context.base}`, text, 'completed'));
  (message?.tool_calls ?? []).forEach((call: ToolCall, i) => {
    output.push(toolCallItem(context, i, { id: call.id, name: call.function.name, arguments: call.function.arguments }, 'completed'));
  });
  return { ...responseObject(context, statusOf(choice?.finish_reason), output, body.usage), output_text: text };
}
