/**
 * `POST /v1/responses` on the chat path (spec 4.1): the request is translated to chat
 * (`responses-request.ts`), routed like chat, and the result returned as a `response` object
 * (message, reasoning and function_call output items); streaming emits the typed events
 * `response.created`, `response.output_item.added`, `response.content_part.added`,
 * `response.output_text.delta`, `…done` events and `response.completed`.
 */
import { readJsonBody } from '../../lib/http/json-body';
import { callerOf } from '../auth/caller';
import type { ChatCompletion, ChatCompletionChunk } from '../processors/types';
import { serveChat, type SurfaceShape } from './chat';
import type { StreamShape } from './chat-stream';
import { FORWARDED_TEXT, parseChatRequest } from './chat-request';
import { responsesToChat } from './responses-request';
import type { GatewayContextDeps, InferenceHandler } from './state';
import type { Usage } from './usage';

type Json = Record<string, unknown>;

interface Call {
  id: string;
  name: string;
  arguments: string;
}

function responseUsage(usage: Usage | undefined | null): Json | null {
  if (!usage) return null;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: usage.prompt_tokens ?? 0, input_tokens_details: { cached_tokens: cached },
    output_tokens: usage.completion_tokens ?? 0, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens ?? (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0),
  };
}

function outputItems(id: string, text: string | null, reasoning: string | undefined, calls: readonly Call[]): Json[] {
  const items: Json[] = [];
  if (reasoning) items.push({ type: 'reasoning', id: `rs_${id}`, summary: [{ type: 'summary_text', text: reasoning }] });
  if (text !== null && text !== '') {
    items.push({ type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
  }
  calls.forEach((call, i) => items.push({ type: 'function_call', id: `fc_${id}_${i}`, call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' }));
  return items;
}

function responseObject(id: string, model: string, created: number, status: string, output: Json[], usage: Usage | undefined | null): Json {
  return {
    id: `resp_${id}`, object: 'response', created_at: created, status, model, output, usage: responseUsage(usage),
    error: null, incomplete_details: null, parallel_tool_calls: true, tool_choice: 'auto', tools: [], text: { format: { type: 'text' } },
  };
}

function frame(type: string, sequence: number, payload: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...payload })}\n\n`;
}

/** Stateful translation of one chat stream into response events. */
function responsesStream(): StreamShape {
  let sequence = 0;
  let id = '';
  let model = '';
  let created = 0;
  let text = '';
  let reasoning = '';
  let messageStarted = false;
  let usage: Usage | undefined;
  const calls: Call[] = [];
  const emit = (type: string, payload: Json) => frame(type, sequence++, payload);
  const messageId = () => `msg_${id}`;
  return {
    start: () => [],
    frames: (chunk: ChatCompletionChunk) => {
      const out: string[] = [];
      if (!id) {
        id = chunk.id || 'gateway';
        model = chunk.model;
        created = chunk.created;
        out.push(emit('response.created', { response: responseObject(id, model, created, 'in_progress', [], null) }));
      }
      if (chunk.usage) usage = chunk.usage as Usage;
      const delta = chunk.choices[0]?.delta;
      if (delta?.reasoning_content) reasoning += delta.reasoning_content;
      for (const call of delta?.tool_calls ?? []) {
        const slot = (calls[call.index] ??= { id: '', name: '', arguments: '' });
        if (call.id) slot.id = call.id;
        if (call.function?.name) slot.name += call.function.name;
        if (call.function?.arguments) slot.arguments += call.function.arguments;
      }
      if (delta?.content) {
        if (!messageStarted) {
          messageStarted = true;
          out.push(emit('response.output_item.added', { output_index: 0, item: { type: 'message', id: messageId(), status: 'in_progress', role: 'assistant', content: [] } }));
          out.push(emit('response.content_part.added', { item_id: messageId(), output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
        }
        text += delta.content;
        out.push(emit('response.output_text.delta', { item_id: messageId(), output_index: 0, content_index: 0, delta: delta.content }));
      }
      return out;
    },
    done: () => {
      const out: string[] = [];
      if (!id) out.push(emit('response.created', { response: responseObject((id = 'gateway'), model, created, 'in_progress', [], null) }));
      if (messageStarted) {
        const part = { type: 'output_text', text, annotations: [] };
        out.push(emit('response.output_text.done', { item_id: messageId(), output_index: 0, content_index: 0, text }));
        out.push(emit('response.content_part.done', { item_id: messageId(), output_index: 0, content_index: 0, part }));
        out.push(emit('response.output_item.done', { output_index: 0, item: { type: 'message', id: messageId(), status: 'completed', role: 'assistant', content: [part] } }));
      }
      const output = outputItems(id, messageStarted ? text : null, reasoning || undefined, calls.filter(Boolean));
      out.push(emit('response.completed', { response: responseObject(id, model, created, 'completed', output, usage) }));
      return out;
    },
  };
}

export const responsesShape: SurfaceShape = {
  completion: (body: ChatCompletion & { usage?: Usage }) => {
    const message = body.choices[0]?.message;
    const calls = (message?.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
    const output = outputItems(body.id, message?.content ?? null, message?.reasoning_content ?? undefined, calls);
    const textOut = message?.content ?? '';
    return { ...responseObject(body.id, body.model, body.created, 'completed', output, body.usage), output_text: textOut };
  },
  stream: responsesStream,
};

/** `POST /v1/responses`. */
export function responsesHandler(deps: GatewayContextDeps): InferenceHandler {
  return async (ctx) => {
    const caller = callerOf(ctx.state);
    const request = parseChatRequest(responsesToChat(await readJsonBody(ctx.req, deps.maxBodyBytes, FORWARDED_TEXT)));
    await serveChat(ctx, deps, request, caller.role, responsesShape);
  };
}
