/**
 * The benchmark's fake LLM upstream: a minimal `node:http` server on 127.0.0.1 answering
 * `POST /v1/chat/completions` with precomputed bodies. Nothing is recorded per request, so memory
 * stays flat however long a run lasts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Number of content chunks in a streamed answer (before the usage chunk and `[DONE]`). */
export const STREAM_CHUNKS = 64;
/** Marker carried in every response id, so a caller can tell the answer came from this server. */
export const UPSTREAM_MARKER = 'chatcmpl-benchupstream';

export interface BenchUpstreamOptions {
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** SSE chunks per `write` call (1 = one write per chunk). Default 1. */
  sseBatch?: number;
  /**
   * Fault scenario (`npm run bench:gateway:faults`): `fail_half` answers every second request
   * with a 500; `stall` reads the request and never answers. Default none.
   */
  fault?: 'fail_half' | 'stall';
}

export interface BenchUpstream {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;
const MODEL = 'bench-model';
const USAGE = { prompt_tokens: 12, completion_tokens: STREAM_CHUNKS, total_tokens: 12 + STREAM_CHUNKS, prompt_tokens_details: { cached_tokens: 4 } };

const JSON_BODY = Buffer.from(JSON.stringify({
  id: UPSTREAM_MARKER,
  object: 'chat.completion',
  created: CREATED,
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?' }, finish_reason: 'stop', logprobs: null }],
  usage: USAGE,
}));

function sseLine(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** The precomputed SSE stream: 64 content chunks, one finish chunk carrying usage, `[DONE]`. */
function streamLines(): string[] {
  const base = { id: UPSTREAM_MARKER, object: 'chat.completion.chunk', created: CREATED, model: MODEL };
  const lines: string[] = [];
  for (let i = 0; i < STREAM_CHUNKS; i += 1) {
    const delta = i === 0 ? { role: 'assistant', content: 'tok0 ' } : { content: `tok${i} ` };
    lines.push(sseLine({ ...base, choices: [{ index: 0, delta, finish_reason: null, logprobs: null }] }));
  }
  lines.push(sseLine({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop', logprobs: null }], usage: USAGE }));
  lines.push('data: [DONE]\n\n');
  return lines;
}

/** Groups the stream's lines into `batch`-sized buffers, one per write. */
function streamWrites(batch: number): Buffer[] {
  const lines = streamLines();
  const writes: Buffer[] = [];
  for (let i = 0; i < lines.length; i += batch) writes.push(Buffer.from(lines.slice(i, i + batch).join('')));
  return writes;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': String(JSON_BODY.length) };
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const NOT_FOUND = Buffer.from(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
const FAILED = Buffer.from(JSON.stringify({ error: { message: 'bench fault: engine error', type: 'server_error' } }));

/** `"stream": true` anywhere at the top level of the (small) request body. */
const STREAM_FLAG = /"stream"\s*:\s*true/;

/** Wraps {@link handle} with a fault; the healthy path stays untouched. */
function faulty(fault: NonNullable<BenchUpstreamOptions['fault']>, writes: readonly Buffer[]): (req: IncomingMessage, res: ServerResponse) => void {
  let count = 0;
  return (req, res) => {
    count += 1;
    if (fault === 'stall') {
      req.resume(); // read the body, never answer: the gateway's first-byte timeout decides
      return;
    }
    if (count % 2 === 0) {
      req.resume();
      req.on('end', () => res.writeHead(500, { 'content-type': 'application/json', 'content-length': String(FAILED.length) }).end(FAILED));
      return;
    }
    handle(req, res, writes);
  };
}

function handle(req: IncomingMessage, res: ServerResponse, writes: readonly Buffer[]): void {
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(NOT_FOUND.length) }).end(NOT_FOUND);
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => { body += chunk; });
  req.on('end', () => {
    if (!STREAM_FLAG.test(body)) {
      res.writeHead(200, JSON_HEADERS).end(JSON_BODY);
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    const last = writes.length - 1;
    for (let i = 0; i < last; i += 1) res.write(writes[i]);
    res.end(writes[last]);
  });
}

/** Starts the upstream on 127.0.0.1. */
export async function startBenchUpstream(options: BenchUpstreamOptions): Promise<BenchUpstream> {
  const writes = streamWrites(Math.max(1, options.sseBatch ?? 1));
  const server = createServer(options.fault ? faulty(options.fault, writes) : (req, res) => handle(req, res, writes));
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
