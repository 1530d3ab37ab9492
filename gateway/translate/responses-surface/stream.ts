/**
 * Chat-completions stream chunks → Responses-API stream events, one chunk at a time
 * (docs/inference-surfaces.md "`POST /v1/responses`"). Every event is `event: <type>` +
 * `data: {type, sequence_number, …}`, numbered from 0. Each output item is streamed as it forms:
 *
 * | chat chunk | events |
 * |---|---|
 * | (stream opens) | `response.created`, `response.in_progress` |
 * | `delta.reasoning_content` (or `reasoning`) | `output_item.added` reasoning, `reasoning_summary_part.added` (once), `reasoning_summary_text.delta` |
 * | `delta.content` | `output_item.added` message, `content_part.added` (once), `output_text.delta` |
 * | `delta.tool_calls[k]`, function tool | `output_item.added` function_call (at its first argument fragment), `function_call_arguments.delta` |
 * | `delta.tool_calls[k]`, freeform tool | `output_item.added` custom_tool_call; its `input` is sent when the call closes (`custom_tool_call_input.delta` with the whole input, `.done`): it is a JSON string inside the arguments until then |
 * | an item of another kind (or another call) starts | the open item's `…done` events, then `output_item.done` |
 * | `finish_reason`, the usage chunk | remembered |
 * | `[DONE]` / the end | the open item's `…done` events, `response.completed` (or `response.incomplete` after `finish_reason: length`) with every item and the usage |
 * | an upstream failure after the first byte | `response.failed` with `error: {code: "server_error", message}` |
 *
 * A tool call is announced at its first argument fragment (or when anything else comes first), so
 * a function name some upstreams send in pieces arrives whole. An argument fragment of a call that
 * was already closed (an upstream interleaving calls) is kept for `response.completed` only.
 */
import type { ChatCompletionChunk } from '../../processors/types';
import type { StreamShape } from '../../surfaces/chat-stream';
import type { Usage } from '../../surfaces/usage';
import { customInput, messageItem, reasoningItem, responseObject, statusOf, toolCallItem, type ResponseContext } from './response';

type Json = Record<string, unknown>;

interface CallSlot {
  kind: 'call';
  chatIndex: number;
  id: string;
  name: string;
  arguments: string;
  outputIndex: number;
  itemId: string;
  announced: boolean;
  closed: boolean;
}

interface TextItem {
  kind: 'reasoning' | 'message';
  outputIndex: number;
  itemId: string;
  text: string;
}

type OpenItem = CallSlot | TextItem;

/** One response's stream translation (a {@link StreamShape} of the chat relay). */
export class ResponsesStream implements StreamShape {
  private sequence = 0;
  private open: OpenItem | undefined;
  private readonly calls: CallSlot[] = [];
  /** Output items by output index: the final item of each, built when asked. */
  private readonly output: Array<() => Json> = [];
  private finishReason: string | null | undefined;
  private usage: Usage | undefined;
  private ended = false;

  constructor(private readonly context: ResponseContext) {}

  start(): string[] {
    const response = responseObject(this.context, 'in_progress', [], undefined);
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  frames(chunk: ChatCompletionChunk): string[] {
    const out: string[] = [];
    if (chunk.usage) this.usage = chunk.usage as Usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta as (typeof choice.delta & { reasoning?: string | null }) | undefined;
    const reasoning = delta?.reasoning_content ?? delta?.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') this.text('reasoning', reasoning, out);
    if (typeof delta?.content === 'string' && delta.content !== '') this.text('message', delta.content, out);
    for (const fragment of delta?.tool_calls ?? []) this.callFragment(fragment, out);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  done(): string[] {
    const out: string[] = [];
    if (this.ended) return out;
    this.ended = true;
    this.settleCalls(undefined, out);
    this.closeOpen(out);
    const status = statusOf(this.finishReason);
    const response = responseObject(this.context, status, this.output.map((item) => item()), this.usage);
    out.push(this.event(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
    return out;
  }

  error(message: string): string {
    this.ended = true;
    const response = responseObject(this.context, 'failed', this.output.map((item) => item()), this.usage, { code: 'server_error', message });
    return this.event('response.failed', { response });
  }

  private event(type: string, payload: Json): string {
    const data = JSON.stringify({ type, sequence_number: this.sequence++, ...payload });
    return `event: ${type}\ndata: ${data}\n\n`;
  }

  private text(kind: TextItem['kind'], piece: string, out: string[]): void {
    let item = this.open;
    if (item?.kind !== kind) {
      this.settleCalls(undefined, out);
      this.closeOpen(out);
      item = this.openText(kind, out);
    }
    item.text += piece;
    const where = { item_id: item.itemId, output_index: item.outputIndex };
    if (kind === 'message') out.push(this.event('response.output_text.delta', { ...where, content_index: 0, delta: piece, logprobs: [] }));
    else out.push(this.event('response.reasoning_summary_text.delta', { ...where, summary_index: 0, delta: piece }));
  }

  private openText(kind: TextItem['kind'], out: string[]): TextItem {
    const outputIndex = this.output.length;
    const prefix = kind === 'message' ? 'msg' : 'rs';
    const item: TextItem = { kind, outputIndex, itemId: `${prefix}_${this.context.base}${outputIndex === 0 ? '' : `_${outputIndex}`}`, text: '' };
    this.output.push(() => (kind === 'message' ? messageItem(item.itemId, item.text, 'completed') : reasoningItem(item.itemId, item.text)));
    this.open = item;
    const where = { item_id: item.itemId, output_index: outputIndex };
    if (kind === 'message') {
      out.push(this.event('response.output_item.added', { output_index: outputIndex, item: messageItem(item.itemId, '', 'in_progress') }));
      out.push(this.event('response.content_part.added', { ...where, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
    } else {
      out.push(this.event('response.output_item.added', { output_index: outputIndex, item: reasoningItem(item.itemId, undefined) }));
      out.push(this.event('response.reasoning_summary_part.added', { ...where, summary_index: 0, part: { type: 'summary_text', text: '' } }));
    }
    return item;
  }

  private callFragment(fragment: { index: number; id?: string; function?: { name?: string; arguments?: string } }, out: string[]): void {
    const index = typeof fragment.index === 'number' ? fragment.index : 0;
    let slot = this.calls.find((c) => c.chatIndex === index);
    if (!slot) {
      slot = { kind: 'call', chatIndex: index, id: '', name: '', arguments: '', outputIndex: -1, itemId: '', announced: false, closed: false };
      this.calls.push(slot);
    }
    if (fragment.id) slot.id = fragment.id;
    if (fragment.function?.name && !slot.announced) slot.name += fragment.function.name;
    const args = fragment.function?.arguments ?? '';
    if (slot.closed) {
      slot.arguments += args;
      return;
    }
    if (!slot.announced) {
      slot.arguments += args;
      if (args === '') return;
      this.settleCalls(slot, out);
      this.announce(slot, out);
      if (this.context.names.offered(slot.name).type === 'function') {
        out.push(this.event('response.function_call_arguments.delta', { item_id: slot.itemId, output_index: slot.outputIndex, delta: slot.arguments }));
      }
      return;
    }
    slot.arguments += args;
    if (args !== '' && this.context.names.offered(slot.name).type === 'function') {
      out.push(this.event('response.function_call_arguments.delta', { item_id: slot.itemId, output_index: slot.outputIndex, delta: args }));
    }
  }

  /** Announces (and closes) calls still waiting for their first argument fragment, except `except`. */
  private settleCalls(except: CallSlot | undefined, out: string[]): void {
    for (const slot of this.calls) {
      if (slot === except || slot.announced) continue;
      this.announce(slot, out);
      this.closeOpen(out);
    }
  }

  private announce(slot: CallSlot, out: string[]): void {
    this.closeOpen(out);
    slot.announced = true;
    slot.outputIndex = this.output.length;
    const item = toolCallItem(this.context, slot.outputIndex, slot, 'in_progress');
    slot.itemId = item.id as string;
    if (!slot.id) slot.id = item.call_id as string;
    this.output.push(() => toolCallItem(this.context, slot.outputIndex, slot, 'completed'));
    this.open = slot;
    out.push(this.event('response.output_item.added', { output_index: slot.outputIndex, item }));
  }

  private closeOpen(out: string[]): void {
    const item = this.open;
    if (!item) return;
    this.open = undefined;
    const where = { item_id: item.itemId, output_index: item.outputIndex };
    if (item.kind === 'call') this.closeCall(item, where, out);
    else if (item.kind === 'message') {
      const part = { type: 'output_text', text: item.text, annotations: [] };
      out.push(this.event('response.output_text.done', { ...where, content_index: 0, text: item.text, logprobs: [] }));
      out.push(this.event('response.content_part.done', { ...where, content_index: 0, part }));
    } else {
      out.push(this.event('response.reasoning_summary_text.done', { ...where, summary_index: 0, text: item.text }));
      out.push(this.event('response.reasoning_summary_part.done', { ...where, summary_index: 0, part: { type: 'summary_text', text: item.text } }));
    }
    out.push(this.event('response.output_item.done', { output_index: item.outputIndex, item: this.output[item.outputIndex]!() }));
  }

  private closeCall(slot: CallSlot, where: { item_id: string; output_index: number }, out: string[]): void {
    slot.closed = true;
    const tool = this.context.names.offered(slot.name);
    if (tool.type === 'custom') {
      const input = customInput(slot.arguments);
      if (input !== '') out.push(this.event('response.custom_tool_call_input.delta', { ...where, delta: input }));
      out.push(this.event('response.custom_tool_call_input.done', { ...where, input }));
    } else {
      out.push(this.event('response.function_call_arguments.done', { ...where, name: tool.name, arguments: slot.arguments }));
    }
  }
}
