/**
 * One upstream HTTP exchange, driven through undici's dispatcher handler interface (`onConnect`,
 * `onHeaders`, `onData`, `onComplete`, `onError`) instead of `Pool.request`: no Readable stream,
 * async resource or parsed-header object per request. On the bench machine this was about 10 µs of
 * CPU a request less (bench/gateway/cpu-per-request.ts). These callbacks are the contract undici's
 * client core calls (its newer `onRequestStart`/`onResponse*` handlers are adapted onto them by a
 * wrapper that parses every header into an object); the integration tests run them against real
 * upstream servers, so an undici upgrade that changes them fails there. Two shapes:
 *
 * - {@link BufferedExchange}: the whole body, for JSON answers (bounded).
 * - {@link StreamExchange}: settles when the first body chunk of a 2xx answer arrives; the rest is
 *   pushed to a sink chunk by chunk, with backpressure (a sink that returns false pauses the
 *   upstream socket until {@link UpstreamStream.resume}).
 *
 * A non-2xx answer's body is read up to {@link ERROR_BODY_LIMIT} bytes (the rest is discarded) so
 * the caller can classify it. The client's {@link ClientAbort} aborts the exchange at any point.
 */
import type { Dispatcher } from 'undici';
import type { ClientAbort } from '../../lib/http/client-abort';

/** The most of a non-2xx body kept for its error message. */
export const ERROR_BODY_LIMIT = 64 * 1024;

/** A non-2xx answer: status, the `Retry-After` header when present, the body (bounded). */
export interface RefusedAnswer {
  statusCode: number;
  retryAfter: string | undefined;
  body: string;
}

/** How an exchange ended before it produced what it was asked for. */
export type ExchangeFailure =
  | { kind: 'refused'; answer: RefusedAnswer }
  | { kind: 'transport'; error: Error; phase: 'headers' | 'body' }
  | { kind: 'too_large'; limit: number }
  | { kind: 'empty' };

export class ExchangeError extends Error {
  constructor(readonly failure: ExchangeFailure, message: string) {
    super(message);
    this.name = 'ExchangeError';
  }
}

/** The `Retry-After` value of raw undici headers (name/value pairs), if present. */
function retryAfterOf(rawHeaders: ReadonlyArray<Buffer | string>): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 11 && name.toString().toLowerCase() === 'retry-after') return rawHeaders[i + 1]!.toString();
  }
  return undefined;
}

function concat(chunks: Buffer[], size: number): Buffer {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/**
 * What both exchange shapes share: the abort wiring (client signal → undici's abort), the
 * status check, and the bounded collection of a refused answer's body.
 */
abstract class Exchange implements Dispatcher.DispatchHandler {
  protected abortUpstream: ((err: Error) => void) | undefined;
  protected resumeUpstream: (() => void) | undefined;
  protected statusCode = 0;
  private retryAfter: string | undefined;
  protected chunks: Buffer[] = [];
  protected size = 0;
  /** True once the exchange has ended one way or another (callbacks after that are ignored). */
  protected ended = false;
  private readonly onClientAbort: () => void;

  constructor(protected readonly signal: ClientAbort) {
    this.onClientAbort = () => this.abort(signal.reason ?? new Error('client closed the connection'));
    signal.on('abort', this.onClientAbort); // fires at most once (ClientAbort aborts once)
  }

  /** Aborts the upstream request (its socket is closed); `onError` follows. */
  abort(err: Error): void {
    if (this.ended) return;
    if (this.abortUpstream) this.abortUpstream(err);
    else this.fail({ kind: 'transport', error: err, phase: 'headers' }, err);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.ended || this.signal.aborted) {
      // Aborted while it waited for a connection: it is never sent.
      abort(this.signal.reason ?? new Error('aborted before it was sent'));
      return;
    }
    this.abortUpstream = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational (1xx): the real answer follows
    this.statusCode = statusCode;
    this.resumeUpstream = resume;
    if (statusCode >= 300) this.retryAfter = retryAfterOf(rawHeaders);
    return true;
  }

  onData(chunk: Buffer): boolean {
    // undici's parser reports an empty piece when it resumes mid-body: nothing to pass on.
    if (this.ended || chunk.length === 0) return true;
    if (this.statusCode >= 300) {
      if (this.size < ERROR_BODY_LIMIT) {
        const kept = chunk.length <= ERROR_BODY_LIMIT - this.size ? chunk : chunk.subarray(0, ERROR_BODY_LIMIT - this.size);
        this.chunks.push(kept);
        this.size += kept.length;
      }
      return true;
    }
    return this.body(chunk);
  }

  onComplete(): void {
    if (this.ended) return;
    if (this.statusCode >= 300) {
      const answer = { statusCode: this.statusCode, retryAfter: this.retryAfter, body: concat(this.chunks, this.size).toString('utf8') };
      this.fail({ kind: 'refused', answer }, `upstream answered ${this.statusCode}`);
      return;
    }
    this.complete();
  }

  onError(err: Error): void {
    if (this.ended) return;
    if (this.statusCode >= 300) {
      // A refused answer whose body broke off: classified by its status, with what was read.
      this.onComplete();
      return;
    }
    this.fail({ kind: 'transport', error: err, phase: this.statusCode === 0 ? 'headers' : 'body' }, err);
  }

  /** Marks the exchange ended and stops listening to the client. */
  protected finish(): void {
    this.ended = true;
    this.signal.removeListener('abort', this.onClientAbort);
    this.chunks = [];
  }

  protected failure(failure: ExchangeFailure, cause: Error | string): ExchangeError {
    const error = new ExchangeError(failure, typeof cause === 'string' ? cause : cause.message);
    if (typeof cause !== 'string') error.cause = cause;
    return error;
  }

  /** A 2xx body chunk; false pauses the upstream socket. */
  protected abstract body(chunk: Buffer): boolean;
  /** A 2xx answer ended. */
  protected abstract complete(): void;
  /** The exchange failed (`cause` is the error or message behind it). */
  protected abstract fail(failure: ExchangeFailure, cause: Error | string): void;
}

/** A 2xx answer read whole. */
export class BufferedExchange extends Exchange {
  readonly result: Promise<Buffer>;
  private resolve!: (body: Buffer) => void;
  private reject!: (err: Error) => void;

  constructor(signal: ClientAbort, private readonly limit: number, private readonly settled?: (failure?: ExchangeFailure) => void) {
    super(signal);
    this.result = new Promise<Buffer>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  protected body(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.limit) {
      this.abort(this.failure({ kind: 'too_large', limit: this.limit }, `upstream body is larger than ${this.limit} bytes`));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  protected complete(): void {
    const body = concat(this.chunks, this.size);
    this.finish();
    this.settled?.();
    this.resolve(body);
  }

  protected fail(failure: ExchangeFailure, cause: Error | string): void {
    this.finish();
    // An abort carrying our own classified error (body too large) keeps that classification.
    const error = cause instanceof ExchangeError ? cause : this.failure(failure, cause);
    this.settled?.(error.failure);
    this.reject(error);
  }
}

/** Where an open stream's chunks go after the first. */
export interface StreamSink {
  /** A chunk; false pauses the upstream until {@link UpstreamStream.resume}. */
  data(chunk: Buffer): boolean;
  end(): void;
  error(err: Error): void;
}

/** A 2xx streamed answer whose first chunk has arrived. */
export interface UpstreamStream {
  readonly first: Buffer;
  /** Sends every later chunk to `sink` (the upstream stays paused until this is called). */
  pipe(sink: StreamSink, paused?: boolean): void;
  /** Resumes after the sink returned false. */
  resume(): void;
  /** Closes the upstream request. */
  destroy(): void;
}

/** A 2xx answer relayed as it arrives: settles on the first chunk, then pushes to a sink. */
export class StreamExchange extends Exchange implements UpstreamStream {
  readonly opened: Promise<UpstreamStream>;
  first!: Buffer;
  private resolve!: (stream: UpstreamStream) => void;
  private reject!: (err: Error) => void;
  private sink: StreamSink | undefined;
  /** How the exchange ended while no sink was attached yet: delivered by {@link pipe}. */
  private outcome: Error | 'end' | undefined;
  private waiting = true;
  /** Set while the upstream is paused (sink not attached yet, or it asked to wait). */
  private paused = false;

  constructor(signal: ClientAbort, private readonly settled?: (failure?: ExchangeFailure) => void) {
    super(signal);
    this.opened = new Promise<UpstreamStream>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  pipe(sink: StreamSink, paused = false): void {
    this.sink = sink;
    if (this.outcome !== undefined) {
      if (this.outcome === 'end') sink.end();
      else sink.error(this.outcome);
      return;
    }
    if (!paused) this.resume();
  }

  resume(): void {
    if (!this.paused || this.ended) return;
    this.paused = false;
    this.resumeUpstream?.();
  }

  destroy(): void {
    this.abort(new Error('stream closed by the gateway'));
  }

  protected body(chunk: Buffer): boolean {
    if (this.waiting) {
      this.waiting = false;
      this.first = chunk;
      this.paused = true; // until a sink is attached
      this.resolve(this);
      return false;
    }
    const more = this.sink!.data(chunk);
    if (!more) this.paused = true;
    return more;
  }

  protected complete(): void {
    this.finish();
    if (this.waiting) {
      this.waiting = false;
      this.settled?.({ kind: 'empty' });
      this.reject(this.failure({ kind: 'empty' }, 'upstream closed the stream without sending data'));
      return;
    }
    this.settled?.();
    if (this.sink) this.sink.end();
    else this.outcome = 'end';
  }

  protected fail(failure: ExchangeFailure, cause: Error | string): void {
    this.finish();
    const error = this.failure(failure, cause);
    this.settled?.(failure);
    if (this.waiting) {
      this.waiting = false;
      this.reject(error);
      return;
    }
    if (this.sink) this.sink.error(error);
    else this.outcome = error;
  }
}
