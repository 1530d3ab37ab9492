/**
 * A lean HTTP/1.1 client for plain-HTTP upstreams (local engines on `http://`): keep-alive
 * sockets per origin, one socket write per request, the wire format of `http1-wire.ts`, and the
 * dispatcher handler callbacks undici calls (`onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError`), so the exchanges of `exchange.ts` run on either. Measured in the gateway against
 * undici's dispatcher: ~99 vs ~104 µs of CPU per request at c=64 (bench/RESULTS.md, 18:1x); in a
 * bare proxy the gap was ~20 µs. TLS origins stay on undici.
 *
 * Behaviour:
 * - Sockets: LIFO reuse of idle keep-alive sockets, no cap (as undici's pool). An idle socket is
 *   closed after the keep-alive timeout, or a second before the server's `Keep-Alive: timeout=`
 *   hint when that is shorter, so a request is rarely sent on a socket the server is closing.
 * - Responses: `Content-Length`, `chunked` (extensions and trailers skipped) or read-until-close
 *   bodies; 1xx answers skipped; a head over 64 KiB, a malformed status line, chunk size or
 *   conflicting framing fails the request and closes the socket.
 * - Timeouts (errors carry undici's codes, which the classification reads): connect, first byte
 *   (until the response head), and idle between body bytes; none while the handler paused the
 *   body (the client is reading slowly, not the upstream). Deadlines are plain numbers checked by
 *   one sweep per pool (a tenth of the shortest timeout, 5 ms–1 s), not a timer per socket.
 * - Chunked bodies: framing is read in place (an offset, no slice per chunk-size line or CRLF), and
 *   the data of all chunks parsed from what the socket delivered goes to `onData` as one buffer
 *   (one copy): an SSE upstream writing one event per chunk costs one handler call per read.
 * - Backpressure: `onData` returning false pauses the socket until the handler's `resume`.
 * - Abort: the handler's `abort(err)` closes the socket and reports `err` through `onError`.
 */
import { connect, type Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { CR, CRLF, Http1Error, LF, MAX_HEAD_BYTES, parseChunkSize, parseResponseHead, requestHead } from './http1-wire';

export { Http1Error } from './http1-wire';

export interface Http1PoolOptions {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

export interface Http1Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

type Framing = 'length' | 'chunked' | 'close';
const enum Phase { Head, Body, ChunkSize, ChunkData, ChunkEnd, Trailers, Done }

/** One keep-alive socket and the exchange running on it (at most one: no pipelining). */
class Connection {
  handler: Dispatcher.DispatchHandler | undefined;
  private buffered: Buffer | undefined;
  /** Where parsing continues in `buffered` (framing already read is skipped, not sliced off). */
  private at = 0;
  /**
   * Chunk data parsed in the current pass, handed over as one buffer when the pass ends (or before
   * the exchange ends): an upstream that writes many small chunks at once (an SSE stream, one event
   * per chunk) costs the handler one call per socket read, not one per chunk.
   */
  private readonly gathered: Buffer[] = [];
  private phase = Phase.Head;
  private framing: Framing = 'close';
  private remaining = 0;
  private keepAlive = true;
  private keepAliveHintMs = Infinity;
  private paused = false;
  /** Set when the socket may not carry another request. */
  private spent = false;
  private readonly resume = (): void => this.resumeBody();

  /** The request waiting for the socket to connect. */
  private pendingWrite: string | undefined;

  constructor(readonly socket: Socket, private readonly pool: Http1Pool, private connecting: boolean) {
    socket.setNoDelay(true);
    if (connecting) {
      socket.once('connect', () => {
        this.connecting = false;
        const write = this.pendingWrite;
        this.pendingWrite = undefined;
        if (write === undefined || !this.handler) return;
        this.arm(this.pool.options.headersTimeoutMs);
        this.socket.write(write);
      });
    }
    socket.on('data', (chunk: Buffer) => this.onBytes(chunk));
    socket.on('end', () => this.onEnd());
    socket.on('error', (err: Error) => this.fail(err));
    socket.on('close', () => this.onClose());
  }

  /** Sends a request on this socket (an idle one, or a new one once it connects). */
  start(request: Http1Request, handler: Dispatcher.DispatchHandler, head: string): void {
    this.handler = handler;
    this.phase = Phase.Head;
    this.buffered = undefined;
    this.at = 0;
    this.gathered.length = 0;
    this.keepAlive = true;
    this.paused = false;
    if (this.socket.isPaused()) this.socket.resume();
    this.pool.track(this);
    handler.onConnect?.((err?: Error) => this.abort(err ?? new Http1Error('request aborted', 'UND_ERR_ABORTED')));
    if (this.handler !== handler) return; // aborted inside onConnect
    if (this.connecting) {
      this.pendingWrite = head + request.body;
      this.arm(this.pool.options.connectTimeoutMs);
      return;
    }
    this.arm(this.pool.options.headersTimeoutMs);
    this.socket.write(head + request.body);
  }

  private abort(err: Error): void {
    if (!this.handler) return;
    this.fail(err);
  }

  /** Milliseconds-since-epoch after which {@link onTimeout} fires (0: none), checked by the pool's sweep. */
  deadline = 0;

  /** Arms the timeout of the current phase (`ms` from now); 0 disarms it. */
  private arm(ms: number): void {
    this.deadline = ms === 0 ? 0 : Date.now() + ms;
  }

  onTimeout(): void {
    this.deadline = 0;
    if (!this.handler) {
      this.socket.destroy(); // idle past the keep-alive timeout
      return;
    }
    this.fail(this.connecting
      ? new Http1Error('Connect Timeout Error', 'UND_ERR_CONNECT_TIMEOUT')
      : this.phase === Phase.Head
      ? new Http1Error('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT')
      : new Http1Error('Body Timeout Error', 'UND_ERR_BODY_TIMEOUT'));
  }

  /** Ends the running exchange with `err` and closes the socket. */
  private fail(err: Error): void {
    const handler = this.handler;
    this.handler = undefined;
    this.spent = true;
    this.socket.destroy();
    if (handler) handler.onError?.(err);
  }

  private onEnd(): void {
    if (this.handler && this.phase === Phase.Body && this.framing === 'close') {
      this.finish();
      return;
    }
    if (this.handler) this.fail(new Http1Error('other side closed', 'UND_ERR_SOCKET'));
    this.spent = true;
    this.socket.destroy();
  }

  private onClose(): void {
    this.pool.forget(this);
    if (this.handler) this.fail(new Http1Error('other side closed', 'UND_ERR_SOCKET'));
  }

  private onBytes(chunk: Buffer): void {
    if (!this.handler) {
      // Bytes on an idle socket: the server broke the framing; do not reuse it.
      this.spent = true;
      this.socket.destroy();
      return;
    }
    if (this.phase !== Phase.Head) this.arm(this.pool.options.bodyTimeoutMs); // idle between body bytes
    const held = this.buffered;
    this.buffered = held === undefined || this.at >= held.length ? chunk : Buffer.concat([this.at === 0 ? held : held.subarray(this.at), chunk]);
    this.at = 0;
    this.process();
  }

  private resumeBody(): void {
    if (!this.paused || !this.handler) return;
    this.paused = false;
    this.arm(this.pool.options.bodyTimeoutMs);
    this.process();
    if (!this.paused && this.handler) this.socket.resume();
  }

  /**
   * Parses what is buffered until it runs out, the handler pauses, or the exchange ends. The data
   * of the chunks parsed in one pass reaches the handler as one buffer (see {@link gathered}).
   */
  private process(): void {
    this.parse();
    if (this.gathered.length === 0) return;
    if (this.handler) this.deliverGathered();
    else this.gathered.length = 0;
  }

  /** The parsing loop of {@link process}: `buffered` is read from `at` on, without slicing framing away. */
  private parse(): void {
    while (this.handler && !this.paused && this.buffered !== undefined) {
      const buf = this.buffered;
      const at = this.at;
      const left = buf.length - at;
      if (left <= 0) {
        this.buffered = undefined;
        this.at = 0;
        return;
      }
      if (this.phase === Phase.Head) {
        if (!this.head(at === 0 ? buf : buf.subarray(at))) return;
        continue;
      }
      if (this.phase === Phase.Body) {
        const take = this.framing === 'close' ? left : Math.min(this.remaining, left);
        this.at += take;
        if (this.framing === 'length') this.remaining -= take;
        const more = this.deliver(at === 0 && take === buf.length ? buf : buf.subarray(at, at + take));
        if (this.framing === 'length' && this.remaining === 0 && this.handler) this.finish();
        if (!more) return;
        continue;
      }
      if (this.phase === Phase.ChunkData) {
        const take = Math.min(this.remaining, left);
        this.at += take;
        this.remaining -= take;
        if (this.remaining === 0) this.phase = Phase.ChunkEnd;
        this.gathered.push(at === 0 && take === buf.length ? buf : buf.subarray(at, at + take));
        continue;
      }
      if (this.phase === Phase.ChunkEnd) {
        // The CRLF after a chunk's data.
        if (left < 2) return;
        if (buf[at] !== CR || buf[at + 1] !== LF) return this.failAfterGathered(new Http1Error('malformed chunk end', 'UND_ERR_SOCKET'));
        this.at += 2;
        this.phase = Phase.ChunkSize;
        continue;
      }
      if (this.phase === Phase.ChunkSize) {
        const line = parseChunkSize(buf, at);
        if (line === undefined) return;
        if (line instanceof Http1Error) return this.failAfterGathered(line);
        this.at = line.next;
        if (line.size === 0) this.phase = Phase.Trailers;
        else {
          this.remaining = line.size;
          this.phase = Phase.ChunkData;
        }
        continue;
      }
      if (this.phase === Phase.Trailers) {
        // Trailer lines (ignored) up to the empty line that ends the message.
        const eol = buf.indexOf(CRLF, at);
        if (eol === -1) {
          if (left > MAX_HEAD_BYTES) this.failAfterGathered(new Http1Error('trailer line too long', 'UND_ERR_SOCKET'));
          return;
        }
        if (eol === at && this.gathered.length > 0 && !this.deliverGathered()) return; // all data before the end
        if (!this.handler) return;
        this.at = eol + 2;
        if (eol === at) this.finish();
        continue;
      }
      return;
    }
  }

  /** Hands the gathered chunk data to the handler as one buffer; false when it paused (or the exchange ended). */
  private deliverGathered(): boolean {
    const pieces = this.gathered;
    const data = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
    pieces.length = 0;
    return this.deliver(data);
  }

  /** Fails the exchange after handing over the data that arrived intact before the fault. */
  private failAfterGathered(err: Error): void {
    if (this.gathered.length > 0) this.deliverGathered();
    if (this.handler) this.fail(err);
  }

  /** Reads a response head from `buf`; false when more bytes are needed (or the exchange ended). */
  private head(buf: Buffer): boolean {
    const head = parseResponseHead(buf);
    if (head === undefined) return false;
    if (head instanceof Http1Error) {
      this.fail(head);
      return false;
    }
    this.buffered = buf.subarray(head.bodyStart);
    this.at = 0;
    if (head.keepAliveHintMs !== undefined) this.keepAliveHintMs = head.keepAliveHintMs;
    const { statusCode } = head;
    if (statusCode < 200) return true; // an informational answer (1xx): the real one follows
    this.keepAlive = head.keepAlive;
    const handler = this.handler!;
    const noBody = statusCode === 204 || statusCode === 304;
    if (head.chunked && !noBody) this.phase = Phase.ChunkSize;
    else {
      this.phase = Phase.Body;
      this.framing = noBody || head.length !== undefined ? 'length' : 'close';
      this.remaining = noBody ? 0 : head.length ?? 0;
      if (this.framing === 'close') this.keepAlive = false;
    }
    this.arm(this.pool.options.bodyTimeoutMs);
    // The raw headers are read only for refused answers (their Retry-After).
    const more = handler.onHeaders?.(statusCode, (statusCode >= 300 ? head.raw : []) as unknown as Buffer[], this.resume, '') !== false;
    if (this.handler !== handler) return false;
    if (this.phase === Phase.Body && this.framing === 'length' && this.remaining === 0) {
      this.finish();
      return false;
    }
    if (!more) this.pause();
    return true;
  }

  /** Hands body bytes to the handler; false when it paused. */
  private deliver(chunk: Buffer): boolean {
    const handler = this.handler!;
    if (handler.onData?.(chunk) === false && this.handler === handler) {
      this.pause();
      return false;
    }
    return this.handler === handler;
  }

  private pause(): void {
    this.paused = true;
    this.socket.pause();
    this.arm(0);
  }

  /** The response is complete: tell the handler, then park or close the socket. */
  private finish(): void {
    const handler = this.handler!;
    this.handler = undefined;
    this.phase = Phase.Done;
    const leftover = this.buffered !== undefined && this.buffered.length > this.at;
    this.buffered = undefined;
    this.at = 0;
    this.paused = false;
    if (!this.keepAlive || leftover || this.spent) {
      this.spent = true;
      this.socket.destroy();
    } else {
      if (this.socket.isPaused()) this.socket.resume(); // an idle socket still hears the server close it
      this.pool.park(this, this.keepAliveHintMs);
    }
    handler.onComplete?.([]);
  }

  get reusable(): boolean {
    return !this.spent && !this.socket.destroyed;
  }
}

/** Keep-alive connections to one plain-HTTP origin. */
export class Http1Pool {
  private readonly idle: Connection[] = [];
  /** Connections with an exchange running (their phase timeouts are swept). */
  readonly active = new Set<Connection>();
  private sweeper: NodeJS.Timeout | undefined;
  /** How often deadlines are checked: a tenth of the shortest timeout, within 5 ms–1 s. */
  private readonly sweepMs: number;
  private readonly host: string;
  private readonly hostname: string;
  private readonly port: number;
  private closed = false;

  constructor(origin: string, readonly options: Http1PoolOptions) {
    const url = new URL(origin);
    if (url.protocol !== 'http:') throw new Error(`Http1Pool serves plain HTTP origins only, not ${url.protocol}`);
    this.sweepMs = Math.min(1000, Math.max(5, Math.min(options.connectTimeoutMs, options.headersTimeoutMs, options.bodyTimeoutMs) / 10));
    this.host = url.host;
    this.hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = Number(url.port || 80);
  }

  /** Sends a request; the handler hears everything (as with undici's `dispatch`). */
  dispatch(request: Http1Request, handler: Dispatcher.DispatchHandler): void {
    if (this.closed) {
      handler.onError?.(new Http1Error('the pool is closed', 'UND_ERR_DESTROYED'));
      return;
    }
    const head = requestHead(request.method, request.path, this.host, request.headers, request.body);
    if (head instanceof Http1Error) {
      handler.onError?.(head);
      return;
    }
    let connection = this.idle.pop();
    while (connection && !connection.reusable) connection = this.idle.pop();
    if (connection) {
      connection.socket.ref();
      connection.start(request, handler, head);
      return;
    }
    const fresh = new Connection(connect({ host: this.hostname, port: this.port }), this, true);
    fresh.start(request, handler, head);
  }

  /** A connection starting an exchange: its phase deadlines are swept from now on. */
  track(connection: Connection): void {
    this.active.add(connection);
    this.ensureSweeper();
  }

  private ensureSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(this.sweep, this.sweepMs);
    this.sweeper.unref();
  }

  /** Fires the timeouts whose deadline passed: phase timeouts of running exchanges, keep-alive expiry of idle sockets. */
  private readonly sweep = (): void => {
    const now = Date.now();
    for (const connection of this.active) if (connection.deadline !== 0 && now >= connection.deadline) connection.onTimeout();
    for (const connection of [...this.idle]) if (connection.deadline !== 0 && now >= connection.deadline) connection.onTimeout();
    if (this.active.size === 0 && this.idle.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  };

  /** An idle connection back in the pool, closed after the keep-alive timeout (or the server's hint). */
  park(connection: Connection, serverHintMs: number): void {
    this.active.delete(connection);
    if (this.closed) {
      connection.socket.destroy();
      return;
    }
    const ms = Math.max(1000, Math.min(this.options.keepAliveTimeoutMs, serverHintMs - 1000));
    connection.deadline = Date.now() + ms;
    connection.socket.unref();
    this.idle.push(connection);
    this.ensureSweeper();
  }

  forget(connection: Connection): void {
    this.active.delete(connection);
    const i = this.idle.indexOf(connection);
    if (i !== -1) this.idle.splice(i, 1);
  }

  /** Closes idle sockets now; running exchanges finish, then their sockets close. */
  close(): Promise<void> {
    this.closed = true;
    for (const connection of this.idle.splice(0)) connection.socket.destroy();
    if (this.sweeper && this.active.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    return Promise.resolve();
  }
}
