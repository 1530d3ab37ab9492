/**
 * Relays a Responses-API upstream's stream to the client event by event (routes with
 * `upstream_api: responses`; docs/adapters.md "Responses-API upstreams"). Complete events are
 * written as the upstream's own bytes as soon as their blank line arrives; only a partial event is
 * held. The relay watches the events it forwards for the response id, the last `sequence_number`
 * and the usage of `response.completed` / `response.incomplete` / `response.failed` (for the
 * request log). Backpressure passes through (a full client socket pauses the upstream). There is no
 * fallback once a byte has been sent: an upstream failure, or an end before a terminal event,
 * becomes a `response.failed` event and the stream closes.
 */
import type { ServerResponse } from 'node:http';
import type { ClientAbort } from '../../lib/http/client-abort';
import type { Logger } from '../../lib/logger';
import type { Route } from '../registry';
import { SseSplitter } from '../sse/sse-splitter';
import type { UpstreamStream } from '../upstream/client';
import { relayStream, type StreamOutcome, type StreamRelay } from './chat-stream';
import { finishStreamUsage, type Usage } from './usage';

type Json = Record<string, unknown>;

const LF = 10;
const CR = 13;
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
const TERMINAL_MENTION = /"response\.(?:completed|incomplete|failed)"/;
const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/;

/** Chat-shaped usage (what the request log and pricing read) of a Responses-API `usage`. */
export function chatUsageOf(usage: unknown, route: Route): Usage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const u = usage as Json;
  const input = typeof u.input_tokens === 'number' ? u.input_tokens : 0;
  const output = typeof u.output_tokens === 'number' ? u.output_tokens : 0;
  const cached = (u.input_tokens_details as Json | undefined)?.cached_tokens;
  const chat: Usage = {
    prompt_tokens: input, completion_tokens: output, total_tokens: typeof u.total_tokens === 'number' ? u.total_tokens : input + output,
    prompt_tokens_details: typeof cached === 'number' ? { cached_tokens: cached } : null,
  };
  finishStreamUsage(chat, route);
  chat.cache_read_tokens = chat.cached_tokens;
  return chat;
}

/** The end (after its blank line) of the last complete event in `buf`, 0 when none. */
function lastEventEnd(buf: Buffer): number {
  for (let i = buf.length - 1; i >= 1; i -= 1) {
    if (buf[i] !== LF) continue;
    if (buf[i - 1] === LF || (buf[i - 1] === CR && i >= 2 && buf[i - 2] === LF)) return i + 1;
  }
  return 0;
}

/** Cuts an upstream byte stream at event boundaries and watches what passes. */
export class ResponsesEventRelay {
  private readonly splitter = new SseSplitter();
  private held: Buffer = Buffer.alloc(0);
  responseId: string | undefined;
  lastSequence = -1;
  terminal: string | undefined;
  usage: unknown;

  /** The complete events `chunk` finishes, as bytes to write (possibly empty). */
  push(chunk: Buffer): Buffer {
    const buf = this.held.length === 0 ? chunk : Buffer.concat([this.held, chunk]);
    const end = lastEventEnd(buf);
    this.held = end === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(end));
    if (end === 0) return Buffer.alloc(0);
    const out = buf.subarray(0, end);
    for (const data of this.splitter.push(out)) this.watch(data);
    return out;
  }

  /** What is left at the end: a last event without its blank line (written as it is). */
  end(): Buffer {
    const rest = this.held;
    this.held = Buffer.alloc(0);
    if (rest.length > 0) for (const data of [...this.splitter.push(rest), ...this.splitter.end()]) this.watch(data);
    return rest;
  }

  /** The event closing a stream that failed after its first byte. */
  failedEvent(message: string): string {
    const type = 'response.failed';
    const response = { id: this.responseId ?? 'resp_gateway', object: 'response', status: 'failed', output: [], usage: null, error: { code: 'server_error', message } };
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.lastSequence + 1, response })}\n\n`;
  }

  private watch(data: string): void {
    const sequence = SEQUENCE.exec(data);
    if (sequence) this.lastSequence = Math.max(this.lastSequence, Number(sequence[1]));
    if (this.responseId !== undefined && !TERMINAL_MENTION.test(data)) return;
    let event: Json;
    try {
      event = JSON.parse(data) as Json;
    } catch {
      return;
    }
    const response = event.response as Json | undefined;
    if (this.responseId === undefined && typeof response?.id === 'string') this.responseId = response.id;
    if (typeof event.type === 'string' && TERMINAL.has(event.type)) {
      this.terminal = event.type;
      this.usage = response?.usage;
    }
  }
}

/**
 * {@link ResponsesEventRelay} as a {@link StreamRelay}: writes what each chunk completes; at the end,
 * a stream without a terminal event gets a closing `response.failed` and is incomplete, and one
 * whose terminal event is `response.failed` is incomplete too.
 */
class ResponsesStreamRelay implements StreamRelay {
  readonly events = new ResponsesEventRelay();
  incomplete: string | undefined;

  constructor(private readonly res: ServerResponse, private readonly route: Route) {}

  get usage(): Usage | undefined {
    return chatUsageOf(this.events.usage, this.route);
  }

  push(chunk: Buffer): boolean {
    return this.write(this.events.push(chunk));
  }

  end(): void {
    this.write(this.events.end());
    if (this.events.terminal === undefined) {
      this.incomplete = 'the upstream ended the stream before a terminal response event';
      this.write(Buffer.from(this.events.failedEvent(`Upstream stream failed: ${this.incomplete}`)));
    } else if (this.events.terminal === 'response.failed') {
      this.incomplete = 'upstream_response_failed';
    }
  }

  flush(): void {
    // Nothing is queued: each chunk's complete events are written as they arrive.
  }

  private write(bytes: Buffer): boolean {
    return bytes.length === 0 || this.res.destroyed ? !this.res.writableNeedDrain : this.res.write(bytes);
  }
}

/**
 * Sends a Responses-API upstream stream to the client (headers not yet sent), through the chat
 * path's {@link relayStream}. Resolves with the usage for the request log and whether the stream
 * reached a terminal event other than `response.failed`.
 */
export function relayResponsesStream(res: ServerResponse, route: Route, opened: UpstreamStream, signal: ClientAbort, state: { readonly log: Logger }): Promise<StreamOutcome> {
  const relay = new ResponsesStreamRelay(res, route);
  return relayStream(res, route, opened, signal, state, relay, (message) => relay.events.failedEvent(message));
}
