/**
 * Relays an upstream SSE stream to the client without buffering it. Events the gateway does not
 * need to touch (default processor, no usage, no `_routing`) are forwarded without parsing; the
 * usage chunk gains `cached_tokens`; output processors rewrite deltas; the internal `_routing`
 * attribution never reaches the client. Once a byte has been sent there is no fallback: an
 * upstream failure becomes an SSE error event and the stream ends.
 */
import type { ServerResponse } from 'node:http';
import { drainOrClose, type ClientAbort } from '../../lib/http/client-abort';
import type { Logger } from '../../lib/logger';
import { createStreamProcessor, type StreamProcessor } from '../processors';
import type { ChatCompletionChunk } from '../processors/types';
import type { Route } from '../registry';
import { SseSplitter, sseEvent } from '../sse/sse-splitter';
import { finishStreamUsage, type Usage } from './usage';

/** An upstream stream whose first chunk has arrived (so the route is committed). */
export interface OpenedStream {
  first: Buffer;
  rest: AsyncIterator<Buffer>;
  destroy(): void;
}

/**
 * Re-shapes the chat stream for another surface (`/v1/completions`, `/v1/responses`): each
 * processed chunk becomes zero or more complete SSE frames; `done` replaces `[DONE]`.
 */
export interface StreamShape {
  start(): string[];
  frames(chunk: ChatCompletionChunk): string[];
  done(): string[];
}

export interface StreamOutcome {
  usage: Usage | undefined;
  completed: boolean;
  error?: string;
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;

/**
 * Turns upstream bytes into client frames. Frames produced from one upstream chunk are collected
 * and written with one `res.write` (one socket write instead of one per event).
 */
class ChatStreamRelay {
  private readonly splitter = new SseSplitter();
  private readonly processor: StreamProcessor | undefined;
  private finished = false;
  private doneSent = false;
  private pending = '';
  usage: Usage | undefined;

  constructor(private readonly res: ServerResponse, private readonly route: Route, private readonly shape: StreamShape | undefined) {
    this.processor = route.processor === 'default' ? undefined : createStreamProcessor(route.processor);
    if (shape) for (const frame of shape.start()) this.pending += frame;
  }

  /** Writes the events completed by `chunk`; false when the socket wants a drain. */
  push(chunk: Buffer): boolean {
    for (const data of this.splitter.push(chunk)) this.event(data);
    return this.flush();
  }

  end(): void {
    for (const data of this.splitter.end()) this.event(data);
    this.flushProcessor();
    if (this.shape && !this.doneSent) this.done();
    this.flush();
  }

  private flush(): boolean {
    if (this.pending.length === 0) return true;
    const out = this.pending;
    this.pending = '';
    return this.res.write(out);
  }

  private done(): void {
    this.doneSent = true;
    for (const frame of this.shape ? this.shape.done() : [sseEvent('[DONE]')]) this.pending += frame;
  }

  private send(chunk: ChatCompletionChunk): void {
    if (!this.shape) {
      this.pending += sseEvent(JSON.stringify(chunk));
      return;
    }
    for (const frame of this.shape.frames(chunk)) this.pending += frame;
  }

  private event(data: string): void {
    if (data === '[DONE]') {
      this.flushProcessor();
      this.done();
      return;
    }
    if (!this.processor && !this.shape && !data.includes('"_routing"') && !USAGE_OBJECT.test(data)) {
      this.pending += sseEvent(data);
      return;
    }
    let chunk: ChatCompletionChunk & { _routing?: unknown; usage?: Usage | null };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      this.pending += sseEvent(data);
      return;
    }
    if (chunk._routing !== undefined) {
      delete chunk._routing;
      if (Object.keys(chunk).length === 0) return; // a synthetic attribution chunk
    }
    if (chunk.usage && typeof chunk.usage === 'object') {
      finishStreamUsage(chunk.usage, this.route);
      this.usage = chunk.usage;
    }
    for (const out of this.processor ? this.processor.push(chunk) : [chunk]) this.send(out);
  }

  private flushProcessor(): void {
    if (!this.processor || this.finished) return;
    this.finished = true;
    for (const out of this.processor.finish()) this.send(out);
  }
}

/** Sends the stream to the client. Headers must not have been sent yet. */
export async function relayChatStream(res: ServerResponse, route: Route, opened: OpenedStream, signal: ClientAbort, state: { readonly log: Logger }, shape?: StreamShape): Promise<StreamOutcome> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  const relay = new ChatStreamRelay(res, route, shape);
  try {
    let chunk: Buffer | undefined = opened.first;
    while (chunk !== undefined) {
      if (!relay.push(chunk) && !res.destroyed) await drainOrClose(res);
      if (signal.aborted) throw signal.reason ?? new Error('client closed the connection');
      const next = await opened.rest.next();
      chunk = next.done ? undefined : next.value;
    }
    relay.end();
    res.end();
    return { usage: relay.usage, completed: true };
  } catch (err) {
    opened.destroy();
    if (signal.aborted || res.destroyed) return { usage: relay.usage, completed: false, error: 'client_disconnected' };
    const message = (err as Error).message ?? String(err);
    state.log.warn({ event: 'upstream_stream_failed', endpoint_id: route.endpointId, provider: route.providerLabel, err: message }, 'upstream stream failed after the first byte');
    res.end(sseEvent(JSON.stringify({ error: { message: `Upstream stream failed: ${message}`, type: 'server_error', code: 'upstream_error' } })));
    return { usage: relay.usage, completed: false, error: message };
  }
}
