/**
 * An inference response whose last bytes wait for its request-log row to be journaled
 * (docs/request-log.md, "Guarantees"): the handler's `end()` is recorded instead of sent, and the
 * request log's writer releases it right after the write that puts the event-loop turn's rows in
 * the journal. So a client can never read the end of an answer whose row is not on disk yet, even
 * when the gateway is killed with `kill -9` a moment later. The wait is the rest of the current
 * event-loop turn (the writer journals in that turn's check phase), and the journal is still
 * written once per turn.
 *
 * The server makes every response of this class (`createServer({ ServerResponse })`, through
 * the listener's `responseClass`); only the inference path calls {@link hold}, so every other
 * response (health, admin, console) ends at once.
 */
import { OutgoingMessage, ServerResponse, type IncomingMessage } from 'node:http';

type EndCallback = () => void;

export class HeldEndResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  private holding = false;
  /** From {@link holdTail}: writes are kept and sent, in order, just before the end. */
  private tail: unknown[] | undefined = undefined;
  private held = false;
  private heldChunk: unknown = undefined;
  private heldEncoding: unknown = undefined;
  private heldCallback: unknown = undefined;

  /** From now until {@link release}, `end()` is recorded instead of sent. */
  hold(): void {
    this.holding = true;
  }

  /**
   * A stream's last frames (its `[DONE]` or final event) are about to be written: keep the writes
   * from now on with the end, so the client reads none of them before the row is journaled.
   */
  holdTail(): void {
    if (this.holding) this.tail ??= [];
  }

  /** Sends the kept writes and the recorded end (if the handler ended the response), and ends holding. */
  release(): void {
    if (!this.holding) return;
    this.holding = false;
    const tail = this.tail;
    this.tail = undefined;
    if (tail) for (const chunk of tail) super.write(chunk);
    if (!this.held) return;
    this.held = false;
    const chunk = this.heldChunk;
    const encoding = this.heldEncoding;
    const callback = this.heldCallback;
    this.heldChunk = this.heldEncoding = this.heldCallback = undefined;
    // Arguments as the handler passed them: end() sorts out which is the callback.
    (super.end as (a?: unknown, b?: unknown, c?: unknown) => this)(chunk, encoding, callback);
  }

  override write(chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
    if (this.tail === undefined || !this.holding || cb !== undefined || typeof encoding === 'function') return (super.write as (a: unknown, b?: unknown, c?: unknown) => boolean)(chunk, encoding, cb);
    this.tail.push(typeof chunk === 'string' && typeof encoding === 'string' ? Buffer.from(chunk, encoding as BufferEncoding) : chunk);
    return true;
  }

  override end(cb?: EndCallback): this;
  override end(chunk: unknown, cb?: EndCallback): this;
  override end(chunk: unknown, encoding: BufferEncoding, cb?: EndCallback): this;
  override end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    if (!this.holding) return (super.end as (a?: unknown, b?: unknown, c?: unknown) => this)(chunk, encoding, cb);
    if (this.held) return this; // ended already: a second end is a no-op, as for any ended response
    this.held = true;
    this.heldChunk = chunk;
    this.heldEncoding = encoding;
    this.heldCallback = cb;
    return this;
  }

  /** Whether an `end()` waits (read by `writableEnded`, below). */
  get endHeld(): boolean {
    return this.held;
  }
}

// `writableEnded` is true once the handler called `end()`, held or not, so code deciding whether to
// end again (an error after the answer) or whether the client left first sees the end it made.
// Node's own end and write paths read `finished`, not this getter.
Object.defineProperty(HeldEndResponse.prototype, 'writableEnded', {
  configurable: true,
  get(this: HeldEndResponse): boolean {
    const ended: unknown = Reflect.get(OutgoingMessage.prototype, 'writableEnded', this);
    return this.endHeld || ended === true;
  },
});

/** The response's end is held until its row is journaled; undefined for any other response class. */
export function holdEnd(res: ServerResponse): HeldEndResponse | undefined {
  if (!(res instanceof HeldEndResponse)) return undefined;
  res.hold();
  return res;
}

/** A stream's final writes wait with its end ({@link HeldEndResponse.holdTail}; a no-op otherwise). */
export function holdTail(res: ServerResponse): void {
  if (res instanceof HeldEndResponse) res.holdTail();
}
