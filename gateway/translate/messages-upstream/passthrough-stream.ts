/**
 * The stream of a messages-surface request on a message-format route (docs/adapters.md "Messages
 * surface on a message-format route"): the upstream's events reach the client as sent — every
 * event's data unchanged (thinking and its signatures, tool input fragments, server-tool blocks,
 * events this gateway does not know), framed `event: <type>` / `data: <json>` — except
 * `message_start`, whose `message.model` becomes the name the client asked for. Usage is read from
 * `message_start` and `message_delta` for the request log. An upstream stream that ends without
 * `message_stop` (or an `error` event) is cut short: an `error` event says so, and the request is
 * logged as failed.
 */
import type { ServerResponse } from 'node:http';
import type { Route } from '../../registry';
import { SseSplitter } from '../../sse/sse-splitter';
import type { StreamRelay } from '../../surfaces/chat-stream';
import { finishStreamUsage, type Usage } from '../../surfaces/usage';
import { messagesErrorEvent } from '../messages-surface/errors';
import { chatUsageOf, type MessagesUsage } from './response';

/** The event type at the start of a data text (`{"type":"…"`, as messages APIs write it). */
const LEADING_TYPE = /^\{\s*"type"\s*:\s*"([A-Za-z0-9_]+)"/;
const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

export class PassthroughStreamRelay implements StreamRelay {
  private readonly splitter = new SseSplitter();
  private text = '';
  private readonly counted: MessagesUsage = {};
  private stopped = false;
  private failed = false;
  usage: Usage | undefined;
  incomplete: string | undefined;

  constructor(private readonly res: Pick<ServerResponse, 'write' | 'writableNeedDrain' | 'destroyed'>, private readonly route: Route, private readonly clientModel: string) {}

  push(chunk: Buffer): boolean {
    for (const data of this.splitter.push(chunk)) this.event(data);
    this.flush();
    return !this.res.writableNeedDrain;
  }

  end(): void {
    for (const data of this.splitter.end()) this.event(data);
    if (!this.stopped && !this.failed) {
      this.incomplete = 'upstream stream ended before message_stop';
      this.text += messagesErrorEvent(`Upstream stream failed: ${this.incomplete}`);
    }
    this.flush();
  }

  flush(): void {
    if (this.text.length === 0 || this.res.destroyed) return;
    this.res.write(this.text);
    this.text = '';
  }

  private event(data: string): void {
    let type = LEADING_TYPE.exec(data)?.[1];
    let parsed: Record<string, unknown> | undefined;
    if (type === undefined || type === 'message_start' || type === 'message_delta') {
      try {
        parsed = JSON.parse(data) as Record<string, unknown>;
      } catch {
        this.text += `data: ${data}\n\n`; // not JSON: relayed as it came
        return;
      }
      type = typeof parsed?.type === 'string' ? parsed.type : undefined;
    }
    switch (type) {
      case 'message_start': {
        const message = parsed!.message as { model?: unknown; usage?: MessagesUsage } | undefined;
        if (message && typeof message === 'object') {
          this.count(message.usage);
          if ('model' in message) {
            message.model = this.clientModel;
            data = JSON.stringify(parsed);
          }
        }
        break;
      }
      case 'message_delta':
        this.count(parsed!.usage as MessagesUsage | undefined);
        break;
      case 'message_stop':
        this.stopped = true;
        break;
      case 'error':
        this.failed = true;
        this.incomplete = `upstream error event: ${data.slice(0, 300)}`;
        break;
      default:
    }
    this.text += type === undefined ? `data: ${data}\n\n` : `event: ${type}\ndata: ${data}\n\n`;
  }

  /** Usage fields of `message_start` / `message_delta` (a later count replaces an earlier one). */
  private count(usage: MessagesUsage | undefined): void {
    if (usage === null || typeof usage !== 'object') return;
    for (const field of USAGE_FIELDS) if (typeof usage[field] === 'number') this.counted[field] = usage[field];
    const chat = chatUsageOf(this.counted);
    finishStreamUsage(chat, this.route);
    this.usage = chat;
  }
}
