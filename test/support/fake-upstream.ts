/**
 * A fake LLM upstream: a real HTTP server on 127.0.0.1:0 speaking the OpenAI-compatible wire
 * format, with scripted behaviours consumed one per request (FIFO), a default behaviour, and a
 * record of every request it received.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  /** When set, reported as `prompt_tokens_details.cached_tokens`; `null` reports `prompt_tokens_details: null`. */
  cached_tokens?: number | null;
}

export type Behaviour =
  /** Non-streaming chat completion. */
  | { kind: 'json'; content?: string; usage?: Usage; model?: string; extra?: Record<string, unknown> }
  /** Streaming chat completion: one SSE chunk per piece, `intervalMs` apart, then a usage chunk and `[DONE]`. */
  | { kind: 'sse'; pieces?: string[]; intervalMs?: number; usage?: Usage; byteSlices?: number; extraEvents?: string[] }
  /** Embeddings: one vector of `dimensions` per input. */
  | { kind: 'embeddings'; dimensions?: number }
  /** A tool-call reply (streaming when the request asked for it). */
  | { kind: 'tool_call'; name: string; arguments: Record<string, unknown>; id?: string }
  /** Several tool calls in one reply (non-streaming), with optional assistant text alongside. */
  | { kind: 'tool_calls'; calls: ScriptedToolCall[]; content?: string }
  /** A plain error status with an OpenAI-shaped body; `retryAfter` sets `Retry-After` (seconds). */
  | { kind: 'status'; status: number; message?: string; retryAfter?: number }
  /** Waits `delayMs` before sending anything, then behaves as `then`. */
  | { kind: 'slow_first_byte'; delayMs: number; then: Behaviour }
  /** Sends nothing until `until` settles (the test releases it), then behaves as `then`. */
  | { kind: 'held'; until: Promise<unknown>; then: Behaviour }
  /** Sends the SSE headers and one chunk, then nothing until the client gives up. */
  | { kind: 'stall_after_first_chunk' }
  /** Sends `afterChunks` SSE chunks, then destroys the socket (TCP reset). */
  | { kind: 'reset_mid_stream'; afterChunks?: number }
  /** A 400 refusing the prompt as too long for the context window, worded as engines word it. */
  | { kind: 'context_length'; contextLength?: number; requested?: number }
  /** The behaviour `choose` picks from the request (e.g. a tool call naming a tool the client offered). */
  | { kind: 'dynamic'; choose: (request: RecordedRequest) => Behaviour };

export interface ScriptedToolCall {
  name: string;
  /** An object (sent as its JSON) or a raw string (sent as is, e.g. to script bad JSON). */
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
  rawBody: string;
  /** True when the client closed the connection before the response finished. */
  aborted: boolean;
}

export interface FakeUpstream {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:41234/v1`. */
  readonly url: string;
  /** Origin without a path, e.g. `http://127.0.0.1:41234`. */
  readonly origin: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Queues behaviours for the next requests, in order. */
  enqueue(...behaviours: Behaviour[]): void;
  /** Behaviour used when the queue is empty (default: `json` for chat, `embeddings` for embedding paths). */
  setDefault(behaviour: Behaviour | undefined): void;
  /**
   * Chooses the behaviour from the request itself, ahead of the queue (after path behaviours):
   * `undefined` from it (or no responder) falls through to the queue. Scripts a client whose side
   * calls come in no fixed order.
   */
  setResponder(responder: ((request: RecordedRequest) => Behaviour | undefined) | undefined): void;
  /** Behaviour for every request to exactly `path` (e.g. `/health`), ahead of the queue; `undefined` removes it. */
  setPathBehaviour(path: string, behaviour: Behaviour | undefined): void;
  /** The recorded requests to `/chat/completions`, in arrival order. */
  chatRequests(): RecordedRequest[];
  /** Resolves when `count` requests have been received. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The message vLLM-style engines return for an over-long prompt. */
export function contextLengthMessage(contextLength: number, requested: number): string {
  return `This model's maximum context length is ${contextLength} tokens. However, you requested ${requested} tokens `
    + `(${requested - 16} in the messages, 16 in the completion). Please reduce the length of the messages or completion.`;
}

const DEFAULT_USAGE: Usage = { prompt_tokens: 12, completion_tokens: 5, cached_tokens: 4 };

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const queue: Behaviour[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let fallback: Behaviour | undefined;
  let responder: ((request: RecordedRequest) => Behaviour | undefined) | undefined;
  const byPath = new Map<string, Behaviour>();
  let counter = 0;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {
        body = rawBody;
      }
      const record: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body, rawBody, aborted: false };
      requests.push(record);
      res.on('close', () => {
        if (!res.writableFinished) record.aborted = true;
      });
      for (const w of waiters.filter((x) => requests.length >= x.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const isEmbeddings = record.path.endsWith('/embeddings');
      const behaviour = byPath.get(record.path) ?? responder?.(record) ?? queue.shift() ?? fallback ?? (isEmbeddings ? { kind: 'embeddings' } : { kind: 'json' });
      counter += 1;
      void respond(behaviour, record, res, counter);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}/v1`,
    origin,
    port,
    requests,
    enqueue: (...b) => queue.push(...b),
    chatRequests: () => requests.filter((r) => r.path.endsWith('/chat/completions')),
    setDefault: (b) => {
      fallback = b;
    },
    setResponder: (r) => {
      responder = r;
    },
    setPathBehaviour: (path, b) => {
      if (b) byPath.set(path, b);
      else byPath.delete(path);
    },
    waitForRequests: (count, timeoutMs = 10_000) =>
      requests.length >= count
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`fake upstream saw ${requests.length} of ${count} requests`)), timeoutMs);
            waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(); } });
          }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function requestedModel(record: RecordedRequest): string {
  const body = record.body as { model?: unknown } | undefined;
  return typeof body?.model === 'string' ? body.model : 'fake-model';
}

function wantsStream(record: RecordedRequest): boolean {
  return (record.body as { stream?: unknown } | undefined)?.stream === true;
}

function usageBody(usage: Usage): Record<string, unknown> {
  const out: Record<string, unknown> = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
  };
  if (usage.cached_tokens === null) out.prompt_tokens_details = null;
  else if (usage.cached_tokens !== undefined) out.prompt_tokens_details = { cached_tokens: usage.cached_tokens };
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sseHeaders(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
}

function chunk(id: string, model: string, delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function respond(behaviour: Behaviour, record: RecordedRequest, res: ServerResponse, n: number): Promise<void> {
  const model = requestedModel(record);
  const id = `chatcmpl-fake-${n}`;
  switch (behaviour.kind) {
    case 'dynamic':
      return respond(behaviour.choose(record), record, res, n);
    case 'json': {
      sendJson(res, 200, {
        id, object: 'chat.completion', created: 1, model: behaviour.model ?? model,
        choices: [{ index: 0, message: { role: 'assistant', content: behaviour.content ?? 'Hello from the fake upstream.' }, finish_reason: 'stop' }],
        usage: usageBody(behaviour.usage ?? DEFAULT_USAGE),
        ...behaviour.extra,
      });
      return;
    }
    case 'sse': {
      const pieces = behaviour.pieces ?? ['Hel', 'lo', ' there', '.'];
      sseHeaders(res);
      const write = async (text: string) => {
        if (!behaviour.byteSlices) return void res.write(text);
        const bytes = Buffer.from(text, 'utf8');
        for (let i = 0; i < bytes.length; i += behaviour.byteSlices) {
          res.write(bytes.subarray(i, i + behaviour.byteSlices));
          await new Promise((r) => setImmediate(r));
        }
      };
      await write(chunk(id, model, { role: 'assistant', content: '' }));
      for (const extra of behaviour.extraEvents ?? []) await write(`data: ${extra}\n\n`);
      for (const piece of pieces) {
        if (behaviour.intervalMs) await sleep(behaviour.intervalMs);
        if (res.destroyed) return;
        await write(chunk(id, model, { content: piece }));
      }
      await write(chunk(id, model, {}, 'stop'));
      await write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model, choices: [], usage: usageBody(behaviour.usage ?? DEFAULT_USAGE) })}\n\n`);
      await write('data: [DONE]\n\n');
      res.end();
      return;
    }
    case 'embeddings': {
      const input = (record.body as { input?: unknown } | undefined)?.input;
      const inputs = Array.isArray(input) ? input : [input ?? ''];
      const dims = behaviour.dimensions ?? 8;
      sendJson(res, 200, {
        object: 'list', model,
        data: inputs.map((text, index) => ({
          object: 'embedding', index,
          embedding: Array.from({ length: dims }, (_, i) => ((String(text).length + i) % 7) / 7),
        })),
        usage: { prompt_tokens: inputs.length * 3, total_tokens: inputs.length * 3 },
      });
      return;
    }
    case 'tool_call': {
      const call = { id: behaviour.id ?? `call_${n}`, type: 'function', function: { name: behaviour.name, arguments: JSON.stringify(behaviour.arguments) } };
      if (wantsStream(record)) {
        sseHeaders(res);
        res.write(chunk(id, model, { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] }));
        res.write(chunk(id, model, {}, 'tool_calls'));
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model, choices: [], usage: usageBody(DEFAULT_USAGE) })}\n\n`);
        res.end('data: [DONE]\n\n');
      } else {
        sendJson(res, 200, {
          id, object: 'chat.completion', created: 1, model,
          choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }],
          usage: usageBody(DEFAULT_USAGE),
        });
      }
      return;
    }
    case 'tool_calls': {
      const calls = behaviour.calls.map((c, i) => ({
        id: c.id ?? `call_${n}_${i}`, type: 'function',
        function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
      }));
      sendJson(res, 200, {
        id, object: 'chat.completion', created: 1, model,
        choices: [{ index: 0, message: { role: 'assistant', content: behaviour.content ?? null, tool_calls: calls }, finish_reason: 'tool_calls' }],
        usage: usageBody(DEFAULT_USAGE),
      });
      return;
    }
    case 'status': {
      const headers: Record<string, string> = behaviour.retryAfter !== undefined ? { 'retry-after': String(behaviour.retryAfter) } : {};
      const type = behaviour.status === 401 ? 'authentication_error' : behaviour.status === 429 ? 'rate_limit_error' : behaviour.status >= 500 ? 'server_error' : 'invalid_request_error';
      sendJson(res, behaviour.status, { error: { message: behaviour.message ?? `fake upstream status ${behaviour.status}`, type, code: behaviour.status } }, headers);
      return;
    }
    case 'slow_first_byte': {
      await sleep(behaviour.delayMs);
      if (res.destroyed) return;
      await respond(behaviour.then, record, res, n);
      return;
    }
    case 'held': {
      await behaviour.until.catch(() => undefined);
      if (res.destroyed) return;
      await respond(behaviour.then, record, res, n);
      return;
    }
    case 'stall_after_first_chunk': {
      sseHeaders(res);
      res.write(chunk(id, model, { role: 'assistant', content: 'Partial' }));
      return; // never ends; the client's timeout or abort closes it
    }
    case 'reset_mid_stream': {
      sseHeaders(res);
      for (let i = 0; i < (behaviour.afterChunks ?? 2); i += 1) res.write(chunk(id, model, { content: `piece${i} ` }));
      await sleep(20);
      res.socket?.resetAndDestroy();
      return;
    }
    case 'context_length': {
      const contextLength = behaviour.contextLength ?? 8192;
      sendJson(res, 400, {
        object: 'error',
        message: contextLengthMessage(contextLength, behaviour.requested ?? contextLength + 1000),
        type: 'BadRequestError', param: null, code: 400,
      });
      return;
    }
  }
}

/** Two fake upstreams, for tests of fallback between routes. */
export async function startUpstreamPair(): Promise<[FakeUpstream, FakeUpstream]> {
  return [await startFakeUpstream(), await startFakeUpstream()];
}

/** Closes whatever was started (gateways, upstreams), skipping what was not. */
export async function closeAll(...items: Array<{ close(): Promise<void> } | undefined>): Promise<void> {
  for (const item of items) await item?.close();
}
