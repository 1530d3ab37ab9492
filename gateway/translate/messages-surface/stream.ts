/**
 * Chat-completions stream chunks → messages-surface events, one chunk at a time (nothing is held
 * back: each chunk's events are written with it; docs/inference-surfaces.md "Messages surface").
 *
 * | chat chunk | events |
 * |---|---|
 * | first chunk | `message_start` (usage zero), `ping` |
 * | `delta.reasoning_content` | `content_block_start` thinking (once), `content_block_delta` `thinking_delta` |
 * | `delta.content` | `content_block_start` text (once per run), `content_block_delta` `text_delta` |
 * | `delta.tool_calls[k]` | `content_block_start` tool_use (new `k`), `content_block_delta` `input_json_delta` |
 * | `finish_reason`, usage chunk | remembered |
 * | `[DONE]` / end | `content_block_stop`, `message_delta` (stop_reason, stop_sequence, usage), `message_stop` |
 *
 * A block is stopped when a block of another kind (or another tool call) starts. A late argument
 * fragment of an already stopped tool call is still sent, with that call's block index.
 */
import type { ChatCompletionChunk, ToolCallDelta } from '../../processors/types';
import type { StreamShape } from '../../surfaces/chat-stream';
import type { Usage } from '../../surfaces/usage';
import { messagesErrorEvent } from './errors';
import { messageId, messagesUsage, stopInfo, type MessageContext } from './response';

type Json = Record<string, unknown>;

function event(type: string, payload: string): string {
  return `event: ${type}\ndata: ${payload}\n\n`;
}

/**
 * A `content_block_delta` frame: `kind` the delta type, `field` its text field. Written as a
 * template around the one string that needs escaping (the hot path of every streamed token).
 */
function blockDelta(index: number, kind: string, field: string, value: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"${kind}","${field}":${JSON.stringify(value)}}}\n\n`;
}

/** One request's stream translation (a fresh object per stream). */
export class MessagesStream implements StreamShape {
  private started = false;
  /** The open block: its kind (`thinking`, `text`, or the tool call's chat index) and block index. */
  private open: { kind: string | number; index: number } | undefined;
  private nextIndex = 0;
  /** Block index of each tool call by its chat `index`. */
  private readonly tools = new Map<number, number>();
  private finish: string | null = null;
  private matched: unknown;
  private usage: Usage | undefined;

  constructor(private readonly context: MessageContext) {}

  start(): string[] {
    return [];
  }

  frames(chunk: ChatCompletionChunk): string[] {
    const out: string[] = [];
    if (!this.started) this.begin(out, chunk.id);
    if (chunk.usage) this.usage = chunk.usage as Usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = (choice.delta ?? {}) as ChatCompletionChunk['choices'][number]['delta'] & { reasoning?: unknown };
    const reasoning = delta.reasoning_content ?? (typeof delta.reasoning === 'string' ? delta.reasoning : undefined);
    if (reasoning) {
      this.ensure(out, 'thinking', { type: 'thinking', thinking: '', signature: '' });
      out.push(blockDelta(this.open!.index, 'thinking_delta', 'thinking', reasoning));
    }
    if (delta.content) {
      this.ensure(out, 'text', { type: 'text', text: '' });
      out.push(blockDelta(this.open!.index, 'text_delta', 'text', delta.content));
    }
    if (delta.tool_calls) for (const call of delta.tool_calls) this.toolCall(out, call);
    if (choice.finish_reason) {
      this.finish = choice.finish_reason;
      this.matched = (choice as { stop_reason?: unknown }).stop_reason;
    }
    return out;
  }

  done(): string[] {
    const out: string[] = [];
    if (!this.started) this.begin(out, undefined);
    this.close(out);
    const stop = stopInfo(this.finish, this.matched, this.context.stopSequences, this.tools.size > 0);
    out.push(event('message_delta', JSON.stringify({ type: 'message_delta', delta: stop, usage: messagesUsage(this.usage) })));
    out.push(event('message_stop', '{"type":"message_stop"}'));
    return out;
  }

  error(message: string): string {
    return messagesErrorEvent(message);
  }

  private begin(out: string[], chatId: string | undefined): void {
    this.started = true;
    const message = {
      id: messageId(chatId), type: 'message', role: 'assistant', model: this.context.model, content: [],
      stop_reason: null, stop_sequence: null, usage: messagesUsage(undefined),
    };
    out.push(event('message_start', JSON.stringify({ type: 'message_start', message })));
    out.push(event('ping', '{"type":"ping"}'));
  }

  /** Makes a block of `kind` the open one (stopping another), starting it with `block`. */
  private ensure(out: string[], kind: string | number, block: Json): number {
    if (this.open?.kind === kind) return this.open.index;
    this.close(out);
    const index = this.nextIndex++;
    this.open = { kind, index };
    out.push(event('content_block_start', JSON.stringify({ type: 'content_block_start', index, content_block: block })));
    return index;
  }

  private close(out: string[]): void {
    if (!this.open) return;
    out.push(event('content_block_stop', `{"type":"content_block_stop","index":${this.open.index}}`));
    this.open = undefined;
  }

  private toolCall(out: string[], call: ToolCallDelta): void {
    const key = typeof call.index === 'number' ? call.index : 0;
    let index = this.tools.get(key);
    if (index === undefined) {
      const id = call.id || `toolu_${this.nextIndex}`;
      index = this.ensure(out, key, { type: 'tool_use', id, name: call.function?.name ?? '', input: {} });
      this.tools.set(key, index);
    }
    const args = call.function?.arguments;
    if (args) out.push(blockDelta(index, 'input_json_delta', 'partial_json', args));
  }
}

/** A {@link StreamShape} factory for one messages request. */
export function messagesStream(context: MessageContext): () => StreamShape {
  return () => new MessagesStream(context);
}
