/**
 * Relays an upstream SSE stream to the client without buffering it. Events the gateway does not
 * need to touch (default processor, no usage, no `_routing`) are forwarded without parsing; the
 * usage chunk gains `cached_tokens`; output processors rewrite deltas; the internal `_routing`
 * attribution never reaches the client. Once a byte has been sent there is no fallback: an
 * upstream failure becomes an SSE error event and the stream ends.
 */
import type { ServerResponse } from 'node:http';
import type { ClientAbort } from '../../lib/http/client-abort';
import type { Logger } from '../../lib/logger';
import { createStreamProcessor, type StreamProcessor } from '../processors';
import type { ChatCompletionChunk } from '../processors/types';
import type { Route } from '../registry';
import type { UpstreamStream } from '../upstream/client';
import { SseSplitter, sseEvent } from '../sse/sse-splitter';
import { finishStreamUsage, type Usage } from './usage';

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
 * Turns upstream bytes into client frames. Frames are collected and written with one `res.write`
 * per tick: an upstream socket read usually carries many chunks (each its own `onData`), and one
 * write per chunk would send each as its own piece of a vectored socket write (measured: a
 * 66-chunk answer took a 265-piece `writev` and ~50 % more CPU per stream than one write).
 */
class ChatStreamRelay {
  private readonly splitter = new SseSplitter();
  private readonly processor: StreamProcessor | undefined;
  private finished = false;
  private doneSent = false;
  private pending = '';
  private flushQueued = false;
  usage: Usage | undefined;

  constructor(private readonly res: ServerResponse, private readonly route: Route, private readonly shape: StreamShape | undefined) {
    this.processor = route.processor === 'default' ? undefined : createStreamProcessor(route.processor);
    if (shape) for (const frame of shape.start()) this.pending += frame;
  }

  /** Queues the events completed by `chunk` (written at the end of the tick); false when the socket wants a drain. */
  push(chunk: Buffer): boolean {
    for (const data of this.splitter.push(chunk)) this.event(data);
    if (this.pending.length > 0 && !this.flushQueued) {
      this.flushQueued = true;
      process.nextTick(this.flushQueuedFrames);
    }
    return !this.res.writableNeedDrain;
  }

  end(): void {
    for (const data of this.splitter.end()) this.event(data);
    this.flushProcessor();
    if (this.shape && !this.doneSent) this.done();
    this.flush();
  }

  private readonly flushQueuedFrames = (): void => {
    this.flushQueued = false;
    this.flush();
  };

  /** Writes what is queued now (also before an error event or the end of the response). */
  flush(): void {
    if (this.pending.length === 0 || this.res.destroyed) return;
    const out = this.pending;
    this.pending = '';
    this.res.write(out);
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

/**
 * Sends the stream to the client as upstream chunks arrive: each chunk is processed and written
 * from the upstream socket's own read (no intermediate stream or await per chunk). A client that
 * reads slowly pauses the upstream socket until the response drains. Headers must not have been
 * sent yet.
 */
export function relayChatStream(res: ServerResponse, route: Route, opened: UpstreamStream, signal: ClientAbort, state: { readonly log: Logger }, shape?: StreamShape): Promise<StreamOutcome> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  const relay = new ChatStreamRelay(res, route, shape);
  return new Promise<StreamOutcome>((resolve) => {
    let settled = false;
    const onDrain = (): void => opened.resume();
    const settle = (outcome: StreamOutcome): void => {
      if (settled) return;
      settled = true;
      res.off('drain', onDrain);
      signal.off('abort', onAbort);
      resolve(outcome);
    };
    const fail = (err: unknown): void => {
      if (settled) return;
      opened.destroy();
      if (signal.aborted || res.destroyed) {
        settle({ usage: relay.usage, completed: false, error: 'client_disconnected' });
        return;
      }
      const message = (err as Error).message ?? String(err);
      relay.flush(); // the frames already relayed, then the error event
      state.log.warn({ event: 'upstream_stream_failed', endpoint_id: route.endpointId, provider: route.providerLabel, err: message }, 'upstream stream failed after the first byte');
      res.end(sseEvent(JSON.stringify({ error: { message: `Upstream stream failed: ${message}`, type: 'server_error', code: 'upstream_error' } })));
      settle({ usage: relay.usage, completed: false, error: message });
    };
    const onAbort = (): void => fail(signal.reason ?? new Error('client closed the connection'));
    signal.once('abort', onAbort);
    res.on('drain', onDrain);
    let ready: boolean;
    try {
      ready = relay.push(opened.first);
    } catch (err) {
      fail(err);
      return;
    }
    opened.pipe({
      // A throw here (a processor failing on odd input) aborts the upstream; `error` follows.
      data: (chunk) => relay.push(chunk) || res.destroyed,
      end: () => {
        try {
          relay.end();
        } catch (err) {
          fail(err);
          return;
        }
        res.end();
        settle({ usage: relay.usage, completed: true });
      },
      error: fail,
    }, !ready && !res.destroyed);
  });
}
