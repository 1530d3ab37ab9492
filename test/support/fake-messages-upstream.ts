/**
 * A fake messages-API upstream: a real HTTP server on 127.0.0.1:0 answering as a messages API
 * does (a `message` object, or its typed SSE events when the body asks `stream: true` or the path
 * ends in `:streamRawPredict`; `{input_tokens}` on token-count paths), with scripted behaviours
 * consumed one per request (FIFO) and a record of every request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type MessagesBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export type MessagesBehaviour =
  /** A message (JSON, or its SSE events when streaming). */
  | { kind: 'message'; content?: MessagesBlock[]; stopReason?: string; usage?: MessagesUsage }
  /** An error status with the messages error body; `retryAfter` sets `Retry-After`. */
  | { kind: 'status'; status: number; type: string; message?: string; retryAfter?: number }
  /**
   * A 200 stream ending in an `error` event: with `text`, `message_start` and one text delta come
   * first and the error follows `delayMs` (default 50) later; without, the error is the first event.
   */
  | { kind: 'stream_error'; text?: string; delayMs?: number; type: string; message?: string }
  /** A 200 stream cut short: `message_start`, one text delta, then the end (no `message_stop`). */
  | { kind: 'stream_cut'; text: string }
  /** A token-count answer. */
  | { kind: 'count'; inputTokens: number };

export interface MessagesRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface FakeMessagesUpstream {
  /** Origin, e.g. `http://127.0.0.1:41234`. */
  readonly origin: string;
  readonly requests: MessagesRequest[];
  enqueue(...behaviours: MessagesBehaviour[]): void;
  /**
   * Chooses the behaviour from the request itself, ahead of the queue: `undefined` from it (or no
   * responder) falls through to the queue. Scripts a client whose side calls come in no fixed order.
   */
  setResponder(responder: ((request: MessagesRequest) => MessagesBehaviour | undefined) | undefined): void;
  close(): Promise<void>;
}

const DEFAULT_USAGE: MessagesUsage = { input_tokens: 10, output_tokens: 5 };

function message(b: Extract<MessagesBehaviour, { kind: 'message' }>, model: unknown): Record<string, unknown> {
  return {
    id: 'msg_fake01', type: 'message', role: 'assistant', model: typeof model === 'string' ? model : 'cloud-model',
    content: b.content ?? [{ type: 'text', text: 'hello from messages' }], stop_reason: b.stopReason ?? 'end_turn', stop_sequence: null,
    usage: { ...DEFAULT_USAGE, ...b.usage },
  };
}

function sse(res: ServerResponse, type: string, data: Record<string, unknown>): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

function blockStart(block: MessagesBlock): Record<string, unknown> {
  if (block.type === 'text') return { type: 'text', text: '' };
  if (block.type === 'thinking') return { type: 'thinking', thinking: '', signature: '' };
  return { type: 'tool_use', id: block.id, name: block.name, input: {} };
}

function blockDeltas(block: MessagesBlock): Array<Record<string, unknown>> {
  if (block.type === 'text') return [...block.text.matchAll(/.{1,4}/gsu)].map((m) => ({ type: 'text_delta', text: m[0] }));
  if (block.type === 'thinking') return [{ type: 'thinking_delta', thinking: block.thinking }, { type: 'signature_delta', signature: block.signature ?? 'c2ln' }];
  const json = JSON.stringify(block.input);
  const half = Math.floor(json.length / 2);
  return [{ type: 'input_json_delta', partial_json: '' }, { type: 'input_json_delta', partial_json: json.slice(0, half) }, { type: 'input_json_delta', partial_json: json.slice(half) }];
}

function streamMessage(res: ServerResponse, msg: Record<string, unknown>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const usage = msg.usage as MessagesUsage;
  sse(res, 'message_start', { message: { ...msg, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
  sse(res, 'ping', {});
  (msg.content as MessagesBlock[]).forEach((block, index) => {
    sse(res, 'content_block_start', { index, content_block: blockStart(block) });
    for (const delta of blockDeltas(block)) sse(res, 'content_block_delta', { index, delta });
    sse(res, 'content_block_stop', { index });
  });
  sse(res, 'message_delta', { delta: { stop_reason: msg.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  sse(res, 'message_stop', {});
  res.end();
}

function answer(res: ServerResponse, behaviour: MessagesBehaviour, req: MessagesRequest): void {
  const streaming = req.body.stream === true || req.path.endsWith(':streamRawPredict');
  switch (behaviour.kind) {
    case 'count':
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: behaviour.inputTokens }));
      return;
    case 'status':
      res.writeHead(behaviour.status, { 'content-type': 'application/json', ...(behaviour.retryAfter !== undefined ? { 'retry-after': String(behaviour.retryAfter) } : {}) })
        .end(JSON.stringify({ type: 'error', error: { type: behaviour.type, message: behaviour.message ?? behaviour.type } }));
      return;
    case 'stream_error': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const fail = (): void => {
        sse(res, 'error', { error: { type: behaviour.type, message: behaviour.message ?? behaviour.type } });
        res.end();
      };
      if (behaviour.text === undefined) return fail();
      sse(res, 'message_start', { message: { id: 'msg_err', type: 'message', role: 'assistant', model: req.body.model, content: [], usage: DEFAULT_USAGE } });
      sse(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      sse(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: behaviour.text } });
      setTimeout(fail, behaviour.delayMs ?? 50);
      return;
    }
    case 'stream_cut':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, 'message_start', { message: { id: 'msg_cut', type: 'message', role: 'assistant', model: req.body.model, content: [], usage: DEFAULT_USAGE } });
      sse(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      sse(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: behaviour.text } });
      res.end();
      return;
    case 'message': {
      const msg = message(behaviour, req.body.model);
      if (streaming) streamMessage(res, msg);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(msg));
    }
  }
}

/** Starts the fake on 127.0.0.1:0. Default behaviour: a short text message (a count of 42 on token-count paths). */
export async function startFakeMessagesUpstream(): Promise<FakeMessagesUpstream> {
  const queue: MessagesBehaviour[] = [];
  const requests: MessagesRequest[] = [];
  const sockets = new Set<Socket>();
  let responder: ((request: MessagesRequest) => MessagesBehaviour | undefined) | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const recorded: MessagesRequest = { path: req.url ?? '', headers: req.headers, body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} };
      requests.push(recorded);
      const counting = /count[-_]tokens/.test(recorded.path);
      answer(res, responder?.(recorded) ?? queue.shift() ?? (counting ? { kind: 'count', inputTokens: 42 } : { kind: 'message' }), recorded);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...behaviours) => void queue.push(...behaviours),
    setResponder: (r) => {
      responder = r;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
