/**
 * Messages-API SSE → chat-completion chunks, incrementally: bytes in (split anywhere), the chat
 * SSE text of every event they complete out; nothing is held back but a partial event. Mapping
 * (docs/adapters.md): `message_start` → the role chunk; text / `input_json` / `thinking` deltas →
 * `content` / tool-call argument fragments / `reasoning_content`; a `tool_use` block start → a
 * tool-call delta with its index, id and name; `message_delta` → the chunk with `finish_reason`;
 * `message_stop` → the usage chunk (`choices: []`) and `[DONE]`. An `error` event, or an end
 * without `message_stop`, sets {@link MessagesStreamTranslator.error} and stops the translation.
 */
import { SseSplitter, sseEvent } from '../../sse/sse-splitter';
import { chatUsageOf, finishReasonOf, type MessagesUsage } from './response';

/** An `error` event's `error` (or the gateway's own for a stream cut short). */
export interface MessagesStreamError {
  type: string;
  message: string;
}

interface MessagesEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: MessagesUsage };
  content_block?: { type?: string; id?: string; name?: string; text?: string; thinking?: string };
  delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; stop_reason?: string | null };
  usage?: MessagesUsage;
  error?: { type?: string; message?: string };
}

const DONE = sseEvent('[DONE]');

export class MessagesStreamTranslator {
  private readonly splitter = new SseSplitter();
  private id = 'msg';
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  private usage: MessagesUsage = {};
  /** Tool-call index by content block index (`-1`: not a tool block). */
  private readonly toolOfBlock: number[] = [];
  private tools = 0;
  private stopped = false;
  /** Set when the upstream sent an `error` event or the stream ended early; nothing is translated after it. */
  error: MessagesStreamError | undefined;

  /** The chat SSE text of the events completed by `chunk` ('' when none). */
  push(chunk: Buffer): string {
    if (this.error !== undefined) return '';
    return this.translate(this.splitter.push(chunk));
  }

  /** The end of the upstream's body: a last unterminated event, and an error when `message_stop` never came. */
  end(): string {
    if (this.error !== undefined) return '';
    const out = this.translate(this.splitter.end());
    if (!this.stopped && this.error === undefined) this.error = { type: 'api_error', message: 'the upstream stream ended before message_stop' };
    return out;
  }

  private translate(events: string[]): string {
    let out = '';
    for (const data of events) {
      if (this.error !== undefined || this.stopped) break;
      let event: MessagesEvent;
      try {
        event = JSON.parse(data) as MessagesEvent;
      } catch {
        this.error = { type: 'api_error', message: 'the upstream sent an event that is not JSON' };
        break;
      }
      out += this.event(event);
    }
    return out;
  }

  private event(event: MessagesEvent): string {
    switch (event.type) {
      case 'message_start':
        this.id = event.message?.id ?? this.id;
        this.model = event.message?.model ?? this.model;
        this.usage = { ...event.message?.usage };
        return this.chunk({ role: 'assistant', content: '' });
      case 'content_block_start':
        return this.blockStart(event.index ?? 0, event.content_block ?? {});
      case 'content_block_delta':
        return this.blockDelta(event.index ?? 0, event.delta ?? {});
      case 'message_delta':
        if (event.usage) this.mergeUsage(event.usage);
        return this.chunk({}, finishReasonOf(event.delta?.stop_reason) ?? 'stop');
      case 'message_stop':
        this.stopped = true;
        return sseEvent(JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: chatUsageOf(this.usage) })) + DONE;
      case 'error':
        this.error = { type: event.error?.type ?? 'api_error', message: event.error?.message ?? 'upstream error' };
        return '';
      default:
        return ''; // ping, content_block_stop, and event types added later
    }
  }

  private blockStart(index: number, block: NonNullable<MessagesEvent['content_block']>): string {
    if (block.type === 'tool_use') {
      const tool = this.tools;
      this.tools += 1;
      this.toolOfBlock[index] = tool;
      return this.chunk({ tool_calls: [{ index: tool, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
    }
    this.toolOfBlock[index] = -1;
    if (block.type === 'text' && block.text) return this.chunk({ content: block.text });
    if (block.type === 'thinking' && block.thinking) return this.chunk({ reasoning_content: block.thinking });
    return '';
  }

  private blockDelta(index: number, delta: NonNullable<MessagesEvent['delta']>): string {
    switch (delta.type) {
      case 'text_delta':
        return delta.text ? this.chunk({ content: delta.text }) : '';
      case 'thinking_delta':
        return delta.thinking ? this.chunk({ reasoning_content: delta.thinking }) : '';
      case 'input_json_delta': {
        const tool = this.toolOfBlock[index];
        if (tool === undefined || tool < 0 || !delta.partial_json) return '';
        return this.chunk({ tool_calls: [{ index: tool, function: { arguments: delta.partial_json } }] });
      }
      default:
        return ''; // signature_delta and others carry nothing a chat client reads
    }
  }

  /** `message_delta` usage is cumulative: the fields it carries replace those of `message_start`. */
  private mergeUsage(usage: MessagesUsage): void {
    for (const key of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const) {
      const value = usage[key];
      if (typeof value === 'number') this.usage[key] = value;
    }
  }

  private chunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
    return sseEvent(JSON.stringify({
      id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    }));
  }
}
