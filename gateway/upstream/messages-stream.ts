/**
 * The stream stage of message-format routes: wraps an open upstream stream of messages-API events
 * into an {@link UpstreamStream} of chat-completion chunks, translated chunk by chunk as they
 * arrive (never buffered; backpressure passes through). It opens, committing the request to its
 * route, when the first translated chunk exists: an `error` event or a failure before that still
 * rejects with a retryable {@link UpstreamError}, so the fallback driver may try another route.
 * After that an `error` event (or an end without `message_stop`) is a mid-stream failure: the sink's
 * `error`, which the relay turns into an SSE error event before it closes the stream.
 */
import { MessagesStreamTranslator, type MessagesStreamError } from '../translate/messages-upstream/stream';
import type { StreamSink, UpstreamStream } from './exchange';
import { httpError, type UpstreamError } from './upstream-error';

const EMPTY = Buffer.alloc(0);

/** The HTTP status a messages API answers with for each error type (`overloaded_error`: 529). */
const STATUS_OF_ERROR: Readonly<Record<string, number>> = {
  invalid_request_error: 400, authentication_error: 401, permission_error: 403, not_found_error: 404,
  request_too_large: 413, rate_limit_error: 429, api_error: 500, overloaded_error: 529,
};

/** An `error` event received before the stream opened, classified as its HTTP twin would be. */
export function streamEventError(error: MessagesStreamError): UpstreamError {
  return httpError(STATUS_OF_ERROR[error.type] ?? 500, JSON.stringify({ type: 'error', error }), undefined);
}

/**
 * Resolves with the translated stream once its first chat chunk exists. `classify` turns a
 * failure of the inner stream before that into the error the fallback driver sees.
 */
export function openTranslatedStream(inner: UpstreamStream, classify: (err: unknown) => unknown): Promise<UpstreamStream> {
  return new TranslatedStream(inner, classify).opened;
}

class TranslatedStream implements UpstreamStream {
  first: Buffer = EMPTY;
  readonly opened: Promise<UpstreamStream>;
  private readonly translator = new MessagesStreamTranslator();
  private resolve!: (stream: UpstreamStream) => void;
  private reject!: (err: unknown) => void;
  private isOpen = false;
  private piped = false;
  private done = false;
  private destroyed = false;
  private sink: StreamSink | undefined;
  /** What arrived after opening but before {@link pipe}: text, then how the stream ended. */
  private pendingText = '';
  private outcome: Error | 'end' | undefined;

  constructor(private readonly inner: UpstreamStream, private readonly classify: (err: unknown) => unknown) {
    this.opened = new Promise<UpstreamStream>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const out = this.translator.push(inner.first);
    if (this.translator.error !== undefined) this.translationFailed();
    else if (out !== '') this.open(out);
    else this.pipeInner(false);
  }

  pipe(sink: StreamSink, paused = false): void {
    this.sink = sink;
    if (this.pendingText !== '') {
      const text = this.pendingText;
      this.pendingText = '';
      sink.data(Buffer.from(text));
    }
    if (this.outcome !== undefined) {
      if (this.outcome === 'end') sink.end();
      else sink.error(this.outcome);
      return;
    }
    if (!this.piped) this.pipeInner(paused);
    else if (!paused) this.inner.resume();
  }

  resume(): void {
    this.inner.resume();
  }

  destroy(): void {
    this.done = true;
    if (this.destroyed) return;
    this.destroyed = true;
    this.inner.destroy();
  }

  private pipeInner(paused: boolean): void {
    this.piped = true;
    this.inner.pipe({ data: (chunk) => this.data(chunk), end: () => this.end(), error: (err) => this.error(err) }, paused);
  }

  private open(text: string): void {
    this.isOpen = true;
    this.first = Buffer.from(text);
    this.resolve(this);
  }

  private data(chunk: Buffer): boolean {
    if (this.done) return true;
    const out = this.translator.push(chunk);
    if (this.translator.error !== undefined) {
      if (out !== '' && this.isOpen) this.deliverText(out);
      this.translationFailed();
      return false;
    }
    if (out === '') return true;
    if (!this.isOpen) {
      this.open(out);
      return false; // paused until the relay pipes
    }
    return this.deliverText(out);
  }

  private end(): void {
    if (this.done) return;
    const out = this.translator.end();
    if (out !== '' && this.isOpen) this.deliverText(out);
    if (this.translator.error !== undefined) {
      this.translationFailed();
      return;
    }
    if (!this.isOpen) this.open(out); // not reached: an end before any chunk is a translator error
    this.finish('end');
  }

  private error(err: Error): void {
    if (this.done) return;
    if (!this.isOpen) {
      this.done = true;
      this.reject(this.classify(err));
      return;
    }
    this.finish(err);
  }

  /** The upstream sent an `error` event (or ended early): before opening a rejection, after it a stream failure. */
  private translationFailed(): void {
    const error = this.translator.error!;
    this.done = true; // the inner stream's callbacks after this are ignored
    this.destroy();
    if (!this.isOpen) this.reject(streamEventError(error));
    else this.deliverEnd(new Error(`${error.type}: ${error.message}`));
  }

  private deliverText(text: string): boolean {
    if (this.sink) return this.sink.data(Buffer.from(text));
    this.pendingText += text;
    return false;
  }

  private finish(outcome: Error | 'end'): void {
    if (this.done) return;
    this.done = true;
    this.deliverEnd(outcome);
  }

  private deliverEnd(outcome: Error | 'end'): void {
    if (!this.sink) this.outcome = outcome;
    else if (outcome === 'end') this.sink.end();
    else this.sink.error(outcome);
  }
}
