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
import { holdTail } from '../request-log/held-end';

/**
 * Re-shapes the chat stream for another surface (`/v1/completions`, `/v1/responses`): each
 * processed chunk becomes zero or more complete SSE frames; `done` replaces `[DONE]`.
 */
export interface StreamShape {
  start(): string[];
  frames(chunk: ChatCompletionChunk): string[];
  done(): string[];
  /** The frame reporting an upstream failure after the first byte (absent: chat's `data: {"error": …}`). */
  error?(message: string): string;
  /**
   * The frames of a plain event's data text without parsing it (no `usage`, no `_routing`, the
   * default processor), or `undefined` when the event needs {@link frames} (parsed). A shape's fast
   * path for the common token delta; it must answer exactly what `frames` would.
   */
  plain?(data: string): string | undefined;
  /**
   * {@link plain} on the upstream's bytes: the data of one whole plain event is
   * `chunk[start, end)` (as the upstream wrote it, never decoded); writes the frames into `out` and
   * answers true, or answers false (writing nothing) for the parsing path. A shape that has it
   * takes part in the relay's byte path (see {@link ChatStreamRelay}); it must write exactly the
   * bytes `frames` would.
   */
  plainBytes?(chunk: Buffer, start: number, end: number, out: FrameBytes): boolean;
}

const NO_BYTES = Buffer.alloc(0);

/**
 * The bytes of a shaped stream's next write, collected in one buffer: frames are copied in as they
 * are made (no piece per frame, no concatenation), and the buffer is handed to the socket whole.
 */
export class FrameBytes {
  buf: Buffer = NO_BYTES;
  len = 0;

  /** Room for `n` more bytes at `len`; the buffer to write them into. */
  reserve(n: number): Buffer {
    if (this.len + n > this.buf.length) {
      // Under 4 KiB from Node's buffer pool: a write of a few frames costs no allocation of its own.
      const next = Buffer.allocUnsafe(Math.max(1024, 2 * (this.len + n)));
      if (this.len > 0) next.set(this.buf.subarray(0, this.len));
      this.buf = next;
    }
    return this.buf;
  }

  text(value: string): void {
    this.reserve(3 * value.length);
    this.len += this.buf.write(value, this.len);
  }

  /** The collected bytes (the buffer is the caller's now); empties this. */
  take(): Buffer {
    const out = this.buf.subarray(0, this.len);
    this.buf = NO_BYTES;
    this.len = 0;
    return out;
  }
}

export interface StreamOutcome {
  usage: Usage | undefined;
  completed: boolean;
  error?: string;
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const DATA_PREFIX = Buffer.from('data: ');
const LF = 10;
const CR = 13;
const LF_LF = Buffer.from('\n\n');

/** Whether `chunk` ends where an event ends (its last line is empty), leaving an SSE parser with nothing pending. */
function endsAtEventBoundary(chunk: Buffer): boolean {
  const n = chunk.length;
  return n >= 2 && chunk[n - 1] === LF && (chunk[n - 2] === LF || (n >= 3 && chunk[n - 2] === CR && chunk[n - 3] === LF));
}

// Searched for by short suffixes: Buffer#indexOf finds a needle under 7 bytes by a memchr for its
// first byte, and a needle starting with `"` (frequent in JSON) or a longer one costs 5–10× more.
const USAGE_KEY = { key: Buffer.from('"usage"'), probe: Buffer.from('usage"'), offset: 1 };
const ROUTING_KEY = { key: Buffer.from('"_routing"'), probe: Buffer.from('_rout'), offset: 1 };

/**
 * Where `key` starts in `chunk`, found through `probe`, its part at `offset` (a short needle that
 * does not start with `"`); a copy cut off by the chunk's end counts as a match (its event is
 * incomplete anyway). -1 when absent.
 */
function findKey(chunk: Buffer, { key, probe, offset }: { key: Buffer; probe: Buffer; offset: number }): number {
  for (let at = chunk.indexOf(probe); at !== -1; at = chunk.indexOf(probe, at + 1)) {
    const start = at - offset;
    if (start < 0) continue;
    if (start + key.length > chunk.length) return start;
    if (chunk.compare(key, 0, key.length, start, start + key.length) === 0) return start;
  }
  return -1;
}

/** Where the first CR, `"usage"` or `"_routing"` of `chunk` starts (its length when none): no plain event reaches past it. */
function firstMarker(chunk: Buffer): number {
  let stop = chunk.length;
  const cr = chunk.indexOf(CR);
  if (cr !== -1) stop = cr;
  const usage = findKey(chunk, USAGE_KEY);
  if (usage !== -1 && usage < stop) stop = usage;
  const routing = findKey(chunk, ROUTING_KEY);
  if (routing !== -1 && routing < stop) stop = routing;
  return stop;
}

/**
 * The end (after its blank line) of the plain event starting at `pos`: `data: <one line>\n\n`,
 * whose data does not start with `[` (`[DONE]`, or a rare array payload: both take the parsing
 * path, which writes the same bytes for an array), ending at or before `stop` (the first CR, `"usage"` or `"_routing"` of the chunk,
 * see {@link firstMarker}); -1 otherwise (also when the event is not complete in this chunk).
 */
function plainEventEnd(chunk: Buffer, pos: number, stop: number): number {
  const n = chunk.length;
  if (n - pos < DATA_PREFIX.length + 2) return -1;
  for (let k = 0; k < DATA_PREFIX.length; k += 1) if (chunk[pos + k] !== DATA_PREFIX[k]) return -1;
  if (chunk[pos + 6] === 0x5b) return -1; // `data: [`: [DONE] (or an array payload, rare) takes the parsing path
  const lf = chunk.indexOf(LF, pos + DATA_PREFIX.length);
  if (lf === -1 || lf + 1 >= n || chunk[lf + 1] !== LF) return -1;
  return lf + 2 <= stop ? lf + 2 : -1;
}

/**
 * Turns upstream bytes into client frames. Frames are collected and written with one `res.write`
 * per tick: an upstream socket read usually carries many chunks (with undici each its own
 * `onData`; the lean client hands a read's chunks over as one buffer), and one write per chunk
 * would send each as its own piece of a vectored socket write (measured: a 66-chunk answer took a
 * 265-piece `writev` and ~50 % more CPU per stream than one write).
 *
 * Pass-through: on the plain chat surface with the default processor, a complete event that is
 * one `data: ` line in LF framing, mentions neither `"usage"` nor `"_routing"` and whose data does
 * not start with `[` is forwarded as the upstream's bytes (no decoding, splitting or re-encoding):
 * exactly the bytes the parsing path would write for it. Everything else (usage chunks,
 * attribution, CRLF framing, comments, multi-line events, an event split across upstream chunks,
 * `[DONE]`) takes the parsing path, which then holds any partial event until it completes.
 * A shape with {@link StreamShape.plainBytes} (the messages surface) takes the same byte path:
 * each such event is handed to it as bytes, and one it declines goes to the parser alone. A
 * shape's output (its byte frames and its text frames) is collected in one {@link FrameBytes}.
 */
export class ChatStreamRelay {
  private readonly splitter = new SseSplitter();
  private readonly processor: StreamProcessor | undefined;
  private readonly passThrough: boolean;
  /** True while the SSE parser holds no partial event (so whole events may skip it). */
  private parserIdle = true;
  /** The last bytes the parser took ended with a LF (a blank line may complete the event at the next byte). */
  private endedWithLf = false;
  private finished = false;
  private doneSent = false;
  /** Output queued for the next write: byte runs and text, in order. */
  private pieces: Array<string | Buffer> = [];
  private text = '';
  /** A shape's output for the next write (no shape: {@link pieces}). */
  private readonly frameBytes: FrameBytes | undefined;
  private flushQueued = false;
  usage: Usage | undefined;

  constructor(private readonly res: Pick<ServerResponse, 'write' | 'writableNeedDrain' | 'destroyed'>, private readonly route: Route, private readonly shape: StreamShape | undefined, options: { passThrough?: boolean } = {}) {
    this.processor = route.processor === 'default' ? undefined : createStreamProcessor(route.processor);
    this.passThrough = options.passThrough !== false && !this.processor && (!shape || shape.plainBytes !== undefined);
    this.frameBytes = shape ? new FrameBytes() : undefined;
    if (shape) for (const frame of shape.start()) this.text += frame;
  }

  /** Queues the events completed by `chunk` (written at the end of the tick); false when the socket wants a drain. */
  push(chunk: Buffer): boolean {
    if (this.passThrough && this.parserIdle) this.pushEvents(chunk);
    else if (this.passThrough) this.finishPending(chunk);
    else this.parse(chunk);
    if ((this.text.length > 0 || this.pieces.length > 0 || (this.frameBytes?.len ?? 0) > 0) && !this.flushQueued) {
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
    this.closeText();
    if (this.frameBytes) {
      if (this.frameBytes.len > 0 && !this.res.destroyed) this.res.write(this.frameBytes.take());
      return;
    }
    if (this.pieces.length === 0 || this.res.destroyed) return;
    const pieces = this.pieces;
    this.pieces = [];
    this.res.write(pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))));
  }

  /**
   * The parser holds a partial event (an upstream read ended inside it): the bytes up to that
   * event's end (its blank line, LF framing) go to the parser, and the rest of the chunk takes the
   * byte path again. Without such an end in the chunk (or in CRLF framing), all of it is parsed.
   */
  private finishPending(chunk: Buffer): void {
    let end: number;
    if (this.endedWithLf && chunk[0] === LF) {
      end = 1; // the blank line that ends the event
    } else {
      const at = chunk.indexOf(LF_LF);
      end = at === -1 ? -1 : at + 2;
    }
    if (end === -1 || end >= chunk.length) {
      this.parse(chunk);
      return;
    }
    this.parse(chunk.subarray(0, end));
    this.parserIdle = true; // the event ended: the splitter holds nothing
    this.pushEvents(chunk.subarray(end));
  }

  /** Bytes through the SSE parser. */
  private parse(chunk: Buffer): void {
    for (const data of this.splitter.push(chunk)) this.event(data);
    this.parserIdle = endsAtEventBoundary(chunk);
    this.endedWithLf = chunk.length > 0 && chunk[chunk.length - 1] === LF;
  }

  /**
   * Whole events of a chunk, the parser idle: plain ones pass through as bytes (see the class
   * comment). The chunk is searched natively, once for the markers that make an event not plain
   * and once per event for its line end; at the first event that is not plain, the rest of the
   * chunk goes to the parser.
   */
  private pushEvents(chunk: Buffer): void {
    const n = chunk.length;
    const stop = firstMarker(chunk);
    const shape = this.shape;
    let pos = 0;
    while (pos < n) {
      const end = plainEventEnd(chunk, pos, stop);
      if (end === -1) break;
      if (shape) {
        this.closeText();
        if (!shape.plainBytes!(chunk, pos + DATA_PREFIX.length, end - 2, this.frameBytes!)) {
          this.parse(chunk.subarray(pos, end)); // a whole event: the parser is idle after it
        }
      }
      pos = end;
    }
    if (pos > 0 && !shape) this.bytes(pos === n ? chunk : chunk.subarray(0, pos));
    if (pos < n) this.parse(pos === 0 ? chunk : chunk.subarray(pos));
  }

  private bytes(run: Buffer): void {
    this.closeText();
    this.pieces.push(run);
  }

  /** Moves the text collected so far into the ordered pieces. */
  private closeText(): void {
    if (this.text.length === 0) return;
    if (this.frameBytes) this.frameBytes.text(this.text);
    else this.pieces.push(this.text);
    this.text = '';
  }

  private done(): void {
    this.doneSent = true;
    for (const frame of this.shape ? this.shape.done() : [sseEvent('[DONE]')]) this.text += frame;
  }

  private send(chunk: ChatCompletionChunk): void {
    if (!this.shape) {
      this.text += sseEvent(JSON.stringify(chunk));
      return;
    }
    for (const frame of this.shape.frames(chunk)) this.text += frame;
  }

  private event(data: string): void {
    if (data === '[DONE]') {
      this.flushProcessor();
      this.done();
      return;
    }
    if (!this.processor && !data.includes('"_routing"') && !USAGE_OBJECT.test(data)) {
      if (!this.shape) {
        this.text += sseEvent(data);
        return;
      }
      const frames = this.shape.plain?.(data);
      if (frames !== undefined) {
        this.text += frames;
        return;
      }
    }
    let chunk: ChatCompletionChunk & { _routing?: unknown; usage?: Usage | null };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      this.text += sseEvent(data);
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

/** What {@link relayStream} drives: upstream bytes in, client frames out ({@link ChatStreamRelay} for chat chunks). */
export interface StreamRelay {
  /** Relays what `chunk` completes; false when the socket wants a drain. */
  push(chunk: Buffer): boolean;
  /** The upstream ended: the last frames. */
  end(): void;
  /** Writes what is queued now. */
  flush(): void;
  readonly usage: Usage | undefined;
  /** Set by `end()` when the upstream's answer was cut short (the relay has told the client): why. */
  readonly incomplete?: string | undefined;
}

/**
 * Sends the stream to the client as upstream chunks arrive: each chunk is processed and written
 * from the upstream socket's own read (no intermediate stream or await per chunk). A client that
 * reads slowly pauses the upstream socket until the response drains. Headers must not have been
 * sent yet.
 */
export function relayChatStream(res: ServerResponse, route: Route, opened: UpstreamStream, signal: ClientAbort, state: { readonly log: Logger }, shape?: StreamShape): Promise<StreamOutcome> {
  return relayStream(res, route, opened, signal, state, new ChatStreamRelay(res, route, shape), shape?.error?.bind(shape));
}

/**
 * {@link relayChatStream} with any {@link StreamRelay}; `errorFrame` writes an upstream failure
 * after the first byte (absent: chat's `data: {"error": …}`).
 */
export function relayStream(res: ServerResponse, route: Route, opened: UpstreamStream, signal: ClientAbort, state: { readonly log: Logger }, relay: StreamRelay, errorFrame?: (message: string) => string): Promise<StreamOutcome> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
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
      const text = `Upstream stream failed: ${message}`;
      holdTail(res);
      res.end(errorFrame ? errorFrame(text) : sseEvent(JSON.stringify({ error: { message: text, type: 'server_error', code: 'upstream_error' } })));
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
        holdTail(res); // the last frames go with the end, once the row is journaled
        try {
          relay.end();
        } catch (err) {
          fail(err);
          return;
        }
        res.end();
        const incomplete = relay.incomplete;
        settle(incomplete === undefined ? { usage: relay.usage, completed: true } : { usage: relay.usage, completed: false, error: incomplete });
      },
      error: fail,
    }, !ready && !res.destroyed);
  });
}
