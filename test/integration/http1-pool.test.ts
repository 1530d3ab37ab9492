/**
 * The lean plain-HTTP client (gateway/upstream/http1-pool.ts) against raw TCP servers on
 * 127.0.0.1 that write exact bytes: keep-alive reuse, every body framing (length, chunked with
 * extensions and trailers, until close) cut at every byte, informational answers, closes by the
 * server, timeouts with undici's error codes, and malformed answers refused.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { ClientAbort } from '../../lib/http/client-abort';
import { BufferedExchange, ExchangeError, type ExchangeFailure } from '../../gateway/upstream/exchange';
import { Http1Pool, type Http1PoolOptions } from '../../gateway/upstream/http1-pool';
import { seededRng } from '../../gateway/routing/weighted-order';
import { waitFor } from '../support/wait';

interface RawServer {
  origin: string;
  connections: number;
  /** Requests seen (the bytes of each request head). */
  requests: string[];
  close(): Promise<void>;
}

/** A TCP server that answers each complete request (head + content-length body) with `answer(i)`. */
async function rawServer(answer: (index: number, socket: Socket) => void): Promise<RawServer> {
  const sockets = new Set<Socket>();
  const state: RawServer = { origin: '', connections: 0, requests: [], close: () => Promise.resolve() };
  const server: Server = createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = pending.toString('latin1', 0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        pending = pending.subarray(end + 4 + length);
        state.requests.push(head);
        answer(state.requests.length - 1, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
  return state;
}

const OPTIONS: Http1PoolOptions = { connectTimeoutMs: 2000, headersTimeoutMs: 2000, bodyTimeoutMs: 2000, keepAliveTimeoutMs: 5000 };

function send(pool: Http1Pool, body = '{"q":1}', headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<Buffer> {
  const exchange = new BufferedExchange(new ClientAbort(), 1024 * 1024);
  pool.dispatch({ method: 'POST', path: '/v1/chat/completions', headers, body }, exchange);
  return exchange.result;
}

async function failureOf(promise: Promise<unknown>): Promise<ExchangeFailure> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ExchangeError, `expected an ExchangeError, got ${String(err)}`);
  return err.failure;
}

/** Writes `bytes` one byte per write, each after the previous left. */
function trickle(socket: Socket, bytes: Buffer): void {
  let i = 0;
  const next = (): void => {
    if (i >= bytes.length || socket.destroyed) return;
    socket.write(bytes.subarray(i, i + 1), () => setImmediate(next));
    i += 1;
  };
  next();
}

/**
 * A dispatcher handler that records what the pool hands it. `pause(n)` decides whether the n-th
 * `onData` (from 1) returns false; with `autoResume` the handler resumes itself a moment later.
 */
class RecordingHandler implements Dispatcher.DispatchHandler {
  readonly data: string[] = [];
  status = 0;
  error: Error | undefined;
  resume: (() => void) | undefined;
  readonly done: Promise<void>;
  private settle!: () => void;
  constructor(private readonly pause: (n: number) => boolean = () => false, private readonly autoResume = false) {
    this.done = new Promise((resolve) => { this.settle = resolve; });
  }
  onConnect(): void {}
  onHeaders(status: number, _raw: Buffer[], resume: () => void): boolean {
    this.status = status;
    this.resume = resume;
    return true;
  }
  onData(chunk: Buffer): boolean {
    this.data.push(chunk.toString());
    if (!this.pause(this.data.length)) return true;
    if (this.autoResume) setTimeout(() => this.resume!(), 1);
    return false;
  }
  onComplete(): void {
    this.settle();
  }
  onError(err: Error): void {
    this.error = err;
    this.settle();
  }
}

/** A chunked answer head and `parts` as chunks (the last one, `0`, ends the body unless `end` is false). */
function chunked(parts: string[], end = true): string {
  return parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('') + (end ? '0\r\n\r\n' : '');
}
const CHUNKED_HEAD = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';

describe('lean HTTP/1.1 client for plain-HTTP upstreams', () => {
  const servers: RawServer[] = [];
  const pools: Http1Pool[] = [];
  async function setUp(answer: (index: number, socket: Socket) => void, options: Partial<Http1PoolOptions> = {}): Promise<{ server: RawServer; pool: Http1Pool }> {
    const server = await rawServer(answer);
    servers.push(server);
    const pool = new Http1Pool(server.origin, { ...OPTIONS, ...options });
    pools.push(pool);
    return { server, pool };
  }
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('sends one well-formed request and reuses the keep-alive connection', async () => {
    const { server, pool } = await setUp((i, socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nok-${i}`));
    assert.equal((await send(pool)).toString(), 'ok-0');
    assert.equal((await send(pool)).toString(), 'ok-1');
    assert.equal((await send(pool)).toString(), 'ok-2');
    assert.equal(server.connections, 1);
    const head = server.requests[0]!;
    assert.match(head, /^POST \/v1\/chat\/completions HTTP\/1\.1\r\n/);
    assert.match(head, /\r\nhost: 127\.0\.0\.1:\d+/);
    assert.match(head, /\r\ncontent-type: application\/json/);
    assert.match(head, /\r\ncontent-length: 7$/);
  });

  it('reads chunked bodies (extensions, trailers) and length bodies cut at every byte', async () => {
    const chunked = Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Other: 1\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n');
    const length = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world');
    const { server, pool } = await setUp((i, socket) => trickle(socket, i % 2 === 0 ? chunked : length));
    for (let i = 0; i < 4; i += 1) assert.equal((await send(pool)).toString(), i % 2 === 0 ? 'hello, world' : 'hello world');
    assert.equal(server.connections, 1, 'each framing leaves the connection reusable');
  });

  it('hands the chunks that arrive together to the handler as one buffer, in order', async () => {
    // An SSE upstream writes one event per chunk; a read that holds many must not cost one handler call each.
    const events = Array.from({ length: 66 }, (_, i) => `data: {"i":${i}}\n\n`);
    const { pool } = await setUp((_i, socket) => socket.write(CHUNKED_HEAD + chunked(events)));
    const handler = new RecordingHandler();
    pool.dispatch({ method: 'POST', path: '/v1/chat/completions', headers: {}, body: '{}' }, handler);
    await handler.done;
    assert.equal(handler.error, undefined);
    assert.equal(handler.data.join(''), events.join(''));
    assert.ok(handler.data.length < events.length, `${handler.data.length} handler calls for ${events.length} chunks`);
  });

  it('holds gathered chunk data back while the handler is paused, and ends the body only after it', async () => {
    let second: (() => void) | undefined;
    const { pool } = await setUp((_i, socket) => {
      socket.write(CHUNKED_HEAD + chunked(['a1', 'a2'], false));
      second = () => socket.write(chunked(['b1', 'b2']));
    });
    const handler = new RecordingHandler((n) => n === 1);
    pool.dispatch({ method: 'POST', path: '/v1/chat/completions', headers: {}, body: '{}' }, handler);
    await waitFor(() => handler.data.length > 0, 'the first read delivered');
    assert.deepEqual(handler.data, ['a1a2']);
    second!();
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(handler.data, ['a1a2'], 'nothing is delivered while paused');
    handler.resume!();
    await handler.done;
    assert.equal(handler.error, undefined);
    assert.equal(handler.data.join(''), 'a1a2b1b2');
  });

  it('reads random chunked bodies cut at random places, under random pauses, whole and in order', async () => {
    const random = seededRng(20261122); // seeded: a failing case can be replayed
    const bodies: string[] = [];
    const { server, pool } = await setUp((i, socket) => {
      const parts = Array.from({ length: 1 + Math.floor(random() * 40) }, (_, k) => `${i}:${k}:${'x'.repeat(Math.floor(random() * 300))};`);
      bodies[i] = parts.join('');
      const ext = (): string => (random() < 0.2 ? ';ext=1' : '');
      const wire = Buffer.from(CHUNKED_HEAD + parts.map((p) => `${p.length.toString(16)}${ext()}\r\n${p}\r\n`).join('') + (random() < 0.3 ? '0\r\nX-Trailer: t\r\n\r\n' : '0\r\n\r\n'));
      let at = 0;
      const next = (): void => {
        if (at >= wire.length || socket.destroyed) return;
        const size = 1 + Math.floor(random() * (random() < 0.5 ? 8 : 2000));
        socket.write(wire.subarray(at, at + size), () => setImmediate(next));
        at += size;
      };
      next();
    });
    for (let i = 0; i < 40; i += 1) {
      const handler = new RecordingHandler(() => random() < 0.3, true);
      pool.dispatch({ method: 'POST', path: '/v1/chat/completions', headers: {}, body: '{}' }, handler);
      await handler.done;
      assert.equal(handler.error, undefined, `body ${i}`);
      assert.equal(handler.data.join(''), bodies[i], `body ${i}`);
    }
    assert.equal(server.connections, 1, 'every body left the connection reusable');
  });

  it('delivers the chunks that arrived intact before a malformed one, then fails', async () => {
    const { pool } = await setUp((_i, socket) => socket.write(`${CHUNKED_HEAD}${chunked(['hello', 'world'], false)}zz\r\nxx\r\n`));
    const handler = new RecordingHandler();
    pool.dispatch({ method: 'POST', path: '/v1/chat/completions', headers: {}, body: '{}' }, handler);
    await handler.done;
    assert.equal(handler.data.join(''), 'helloworld');
    assert.match(String(handler.error?.message), /malformed chunk size/);
  });

  it('skips informational answers and reads a body that ends with the connection', async () => {
    const { server, pool } = await setUp((i, socket) => {
      if (i === 0) socket.write('HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi');
      else socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"until":"close"}');
    });
    assert.equal((await send(pool)).toString(), 'hi');
    assert.equal((await send(pool)).toString(), '{"until":"close"}');
    assert.equal((await send(pool)).toString(), '{"until":"close"}');
    assert.equal(server.connections, 2, 'a body read until close spends its connection');
  });

  it('opens a new connection after the server closes one (Connection: close, or while idle)', async () => {
    let sockets: Socket[] = [];
    const { server, pool } = await setUp((i, socket) => {
      sockets.push(socket);
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1\r\n${i === 0 ? 'Connection: close\r\n' : ''}\r\n${i}`);
    });
    assert.equal((await send(pool)).toString(), '0');
    assert.equal((await send(pool)).toString(), '1');
    assert.equal(server.connections, 2);
    // The server closes the idle keep-alive connection; the next request must not fail on it.
    for (const s of sockets) s.end();
    sockets = [];
    await new Promise((r) => setTimeout(r, 50)); // the client hears the close
    assert.equal((await send(pool)).toString(), '2');
    assert.equal(server.connections, 3);
  });

  it('times out a missing first byte and a stalled body with undici\'s error codes', async () => {
    const { pool } = await setUp((i, socket) => {
      if (i === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nonly5');
    }, { headersTimeoutMs: 200, bodyTimeoutMs: 200 });
    const first = await failureOf(send(pool));
    assert.equal(first.kind, 'transport');
    if (first.kind === 'transport') assert.equal((first.error as { code?: string }).code, 'UND_ERR_HEADERS_TIMEOUT');
    const body = await failureOf(send(pool));
    assert.equal(body.kind, 'transport');
    if (body.kind === 'transport') {
      assert.equal(body.phase, 'body');
      assert.equal((body.error as { code?: string }).code, 'UND_ERR_BODY_TIMEOUT');
    }
  });

  it('refuses malformed answers and closes their connections', async () => {
    const answers = [
      'HTTX/1.1 200 OK\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc',
      'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort',
      `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(70 * 1024)}\r\n\r\n`,
    ];
    const { server, pool } = await setUp((i, socket) => {
      socket.write(answers[i]!);
      if (i === 4) socket.end();
    });
    for (let i = 0; i < answers.length; i += 1) {
      const failure = await failureOf(send(pool));
      assert.equal(failure.kind, 'transport', `answer ${i}`);
    }
    assert.equal(server.connections, answers.length, 'no connection was reused after a malformed answer');
  });

  it('refuses a request header that could split the request, sending nothing', async () => {
    const { server, pool } = await setUp((_i, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    const failure = await failureOf(send(pool, '{}', { authorization: 'Bearer x\r\nX-Injected: 1' }));
    assert.equal(failure.kind, 'transport');
    assert.equal(server.connections, 0);
  });

  it('times out a connection the server never completes (a listener whose accept queue is full)', async function () {
    this.timeout(15_000);
    // A listener in a process whose event loop is blocked never accepts: once its queue (backlog 1)
    // holds what it can, the kernel drops further SYNs and a new connection hangs in connect.
    const listener = spawn(process.execPath, ['-e', `
      const server = require('node:net').createServer();
      server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
        process.stdout.write(server.address().port + '\\n');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30000); // ends by itself
        process.exit(0);
      });`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const fillers: Socket[] = [];
    try {
      const port = Number(await new Promise<string>((resolve, reject) => {
        listener.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
        listener.once('exit', () => reject(new Error('listener exited')));
      }));
      let hung = false;
      for (let i = 0; i < 16 && !hung; i += 1) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        fillers.push(socket);
        hung = !(await Promise.race([once(socket, 'connect').then(() => true), delay(300).then(() => false)]));
      }
      assert.ok(hung, 'the accept queue filled up');
      const pool = new Http1Pool(`http://127.0.0.1:${port}`, { ...OPTIONS, connectTimeoutMs: 200 });
      pools.push(pool);
      const failure = await failureOf(send(pool));
      assert.equal(failure.kind, 'transport');
      // The kernel would give up only after minutes of SYN retries, with ETIMEDOUT.
      if (failure.kind === 'transport') assert.equal((failure.error as { code?: string }).code, 'UND_ERR_CONNECT_TIMEOUT');
    } finally {
      for (const socket of fillers) socket.destroy();
      listener.kill('SIGKILL');
    }
  });

  it('reports a refused connection before headers, and serves only http: origins', async () => {
    const { server } = await setUp(() => undefined);
    const origin = server.origin;
    await servers.splice(0)[0]!.close();
    const pool = new Http1Pool(origin, OPTIONS);
    pools.push(pool);
    const failure = await failureOf(send(pool));
    assert.equal(failure.kind, 'transport');
    if (failure.kind === 'transport') {
      assert.equal(failure.phase, 'headers');
      assert.equal((failure.error as { code?: string }).code, 'ECONNREFUSED');
    }
    assert.throws(() => new Http1Pool('https://127.0.0.1:1', OPTIONS), /plain HTTP/);
  });
});
