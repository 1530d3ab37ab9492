/**
 * The upstream exchanges (gateway/upstream/exchange.ts) against real HTTP servers on 127.0.0.1,
 * through both pools the gateway uses (undici's, and the lean one for plain HTTP): whole bodies
 * with a bound, refused answers classified with a bounded body, streams that settle on the first
 * chunk, deliver the rest in order and pause the upstream socket while the sink asks to wait.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { Http1Pool } from '../../gateway/upstream/http1-pool';
import { ClientAbort } from '../../lib/http/client-abort';
import { BufferedExchange, ERROR_BODY_LIMIT, ExchangeError, StreamExchange, type ExchangeFailure, type StreamSink, type UpstreamStream } from '../../gateway/upstream/exchange';
import { waitFor } from '../support/wait';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  origin: string;
  /** Bytes the handler managed to hand to the socket (for backpressure checks). */
  closed: () => number;
  close(): Promise<void>;
}

async function serve(handler: Handler): Promise<TestServer & { server: Server }> {
  let closedSockets = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  server.on('connection', (socket) => socket.on('close', () => { closedSockets += 1; }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    origin: `http://127.0.0.1:${port}`,
    closed: () => closedSockets,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function failureOf(err: unknown): ExchangeFailure {
  assert.ok(err instanceof ExchangeError, `expected an ExchangeError, got ${String(err)}`);
  return err.failure;
}

/** A sink collecting what it is given; `wait` makes it answer false (asking the upstream to pause). */
function collectingSink(): StreamSink & { text: () => string; ended: boolean; failed?: Error; wait: boolean; bytes: number } {
  const chunks: Buffer[] = [];
  const sink = {
    ended: false,
    failed: undefined as Error | undefined,
    wait: false,
    bytes: 0,
    data(chunk: Buffer) {
      chunks.push(Buffer.from(chunk));
      sink.bytes += chunk.length;
      return !sink.wait;
    },
    end() { sink.ended = true; },
    error(err: Error) { sink.failed = err; },
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
  return sink;
}

interface AnyPool {
  dispatch(request: { method: string; path: string; headers: Record<string, string>; body: string }, handler: BufferedExchange | StreamExchange): void;
  close(): Promise<void>;
}

const POOLS: Record<string, (origin: string) => AnyPool> = {
  undici: (origin) => {
    const pool = new Pool(origin);
    return { dispatch: (request, handler) => { pool.dispatch(request, handler); }, close: () => pool.destroy() };
  },
  native: (origin) => new Http1Pool(origin, { connectTimeoutMs: 5000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, keepAliveTimeoutMs: 5000 }),
};

for (const [poolName, makePool] of Object.entries(POOLS)) describe(`upstream exchanges (${poolName} pool)`, () => {
  const servers: TestServer[] = [];
  const pools: AnyPool[] = [];
  async function setUp(handler: Handler): Promise<{ server: TestServer; pool: AnyPool }> {
    const server = await serve(handler);
    servers.push(server);
    const pool = makePool(server.origin);
    pools.push(pool);
    return { server, pool };
  }
  function post(pool: AnyPool, handler: BufferedExchange | StreamExchange): void {
    pool.dispatch({ method: 'POST', path: '/v1/x', headers: { 'content-type': 'application/json' }, body: '{}' }, handler);
  }
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('reads a whole body in chunks and reports it settled', async () => {
    const { pool } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
      setTimeout(() => res.end('"b"}'), 20);
    });
    const outcomes: Array<ExchangeFailure | undefined> = [];
    const exchange = new BufferedExchange(new ClientAbort(), 1024, (failure) => outcomes.push(failure));
    post(pool, exchange);
    assert.equal((await exchange.result).toString(), '{"a":"b"}');
    assert.deepEqual(outcomes, [undefined]);
  });

  it('fails a body larger than its limit and closes the upstream connection', async () => {
    const { server, pool } = await setUp((_req, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(4096, 'x'));
    });
    const exchange = new BufferedExchange(new ClientAbort(), 1000);
    post(pool, exchange);
    const failure = failureOf(await exchange.result.then(() => undefined, (err: unknown) => err));
    assert.deepEqual(failure, { kind: 'too_large', limit: 1000 });
    await waitFor(() => server.closed() === 1, 'the upstream socket closed');
  });

  it('classifies a refused answer with its status, Retry-After and a bounded body', async () => {
    const { pool } = await setUp((_req, res) => {
      res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' });
      res.end(`{"error":{"message":"slow down"}}${' '.repeat(ERROR_BODY_LIMIT * 2)}`);
    });
    for (const exchange of [new BufferedExchange(new ClientAbort(), 1024), new StreamExchange(new ClientAbort())]) {
      post(pool, exchange);
      const settled = exchange instanceof BufferedExchange ? exchange.result : exchange.opened;
      const failure = failureOf(await settled.then(() => undefined, (err: unknown) => err));
      assert.equal(failure.kind, 'refused');
      if (failure.kind !== 'refused') return;
      assert.equal(failure.answer.statusCode, 429);
      assert.equal(failure.answer.retryAfter, '7');
      assert.equal(failure.answer.body.length, ERROR_BODY_LIMIT);
      assert.ok(failure.answer.body.startsWith('{"error":{"message":"slow down"}}'));
    }
  });

  it('reports a connection that cannot be made as a transport failure before headers', async () => {
    const { server } = await setUp(() => undefined);
    const origin = server.origin;
    await servers.splice(0)[0]!.close();
    const pool = makePool(origin);
    pools.push(pool);
    const exchange = new BufferedExchange(new ClientAbort(), 1024);
    post(pool, exchange);
    const failure = failureOf(await exchange.result.then(() => undefined, (err: unknown) => err));
    assert.equal(failure.kind, 'transport');
    if (failure.kind === 'transport') {
      assert.equal(failure.phase, 'headers');
      assert.equal((failure.error as { code?: string }).code, 'ECONNREFUSED');
    }
  });

  it('stops when the client goes away mid-body: the upstream socket is closed', async () => {
    let answering = false;
    const { server, pool } = await setUp((_req, res) => {
      res.writeHead(200);
      res.write('partial'); // and never ends
      answering = true;
    });
    const signal = new ClientAbort();
    const exchange = new BufferedExchange(signal, 1024);
    post(pool, exchange);
    await waitFor(() => answering, 'the upstream answering');
    signal.abort();
    const err = await exchange.result.then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof Error);
    await waitFor(() => server.closed() === 1, 'the upstream socket closed');
  });

  it('opens a stream on its first chunk and relays the rest in order, then ends', async () => {
    const { pool } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 0\n\n');
      let i = 1;
      const timer = setInterval(() => {
        if (i === 5) {
          clearInterval(timer);
          res.end('data: [DONE]\n\n');
          return;
        }
        res.write(`data: ${i}\n\n`);
        i += 1;
      }, 5);
    });
    const outcomes: Array<ExchangeFailure | undefined> = [];
    const exchange = new StreamExchange(new ClientAbort(), (failure) => outcomes.push(failure));
    post(pool, exchange);
    const opened: UpstreamStream = await exchange.opened;
    assert.equal(opened.first.toString(), 'data: 0\n\n');
    assert.deepEqual(outcomes, [], 'not settled while the stream runs');
    const sink = collectingSink();
    opened.pipe(sink);
    await waitFor(() => sink.ended, 'the stream ended');
    assert.equal(sink.text(), 'data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\ndata: [DONE]\n\n');
    assert.deepEqual(outcomes, [undefined]);
  });

  it('fails a 2xx stream that closes without data as empty, and one that breaks off after the first chunk through the sink', async () => {
    const { pool } = await setUp((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (req.headers['x-mode'] === 'empty') {
        res.end();
        return;
      }
      res.write('data: 0\n\n');
      setTimeout(() => res.socket?.destroy(), 30);
    });
    const empty = new StreamExchange(new ClientAbort());
    pool.dispatch({ method: 'POST', path: '/', headers: { 'x-mode': 'empty' }, body: '{}' }, empty);
    assert.deepEqual(failureOf(await empty.opened.then(() => undefined, (e: unknown) => e)), { kind: 'empty' });

    const broken = new StreamExchange(new ClientAbort());
    post(pool, broken);
    const opened = await broken.opened;
    const sink = collectingSink();
    opened.pipe(sink);
    await waitFor(() => sink.failed !== undefined, 'the sink told of the failure');
    assert.equal(sink.ended, false);
    const failure = failureOf(sink.failed);
    assert.equal(failure.kind, 'transport');
    if (failure.kind === 'transport') assert.equal(failure.phase, 'body');
  });

  it('pauses the upstream socket while the sink asks to wait, and resumes on demand', async () => {
    const total = 32 * 1024 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'y');
    let written = 0;
    const { pool } = await setUp((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const pump = (): void => {
        while (written < total) {
          written += piece.length;
          if (!res.write(piece)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const exchange = new StreamExchange(new ClientAbort());
    post(pool, exchange);
    const opened = await exchange.opened;
    const sink = collectingSink();
    sink.wait = true;
    opened.pipe(sink);
    // The sink took one chunk and asked to wait: the upstream stalls on a full socket buffer.
    await waitFor(() => sink.bytes > 0, 'a chunk after the first');
    await new Promise((r) => setTimeout(r, 300));
    const stalledAt = written;
    const received = sink.bytes;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sink.bytes, received, 'nothing delivered while paused');
    assert.equal(written, stalledAt, 'the upstream stopped writing while paused');
    assert.ok(written < total, `the upstream was held back (${written} of ${total} bytes written)`);
    sink.wait = false;
    opened.resume();
    await waitFor(() => sink.ended, 'the stream ended after resuming', 20_000);
    assert.equal(opened.first.length + sink.bytes, total);
  });
});
