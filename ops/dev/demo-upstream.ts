/**
 * The demo upstream (docs/demo-model.md): a real OpenAI-compatible HTTP server on 127.0.0.1 that
 * serves the scripted demo model (ops/dev/demo-script.ts) and deterministic hash embeddings.
 * `POST /v1/chat/completions` (JSON, or SSE chunks with a usage chunk and `[DONE]` when `stream`
 * is true), `POST /v1/embeddings` (`encoding_format` `float` or `base64`, optional `dimensions`),
 * `GET /v1/models`, `GET /health`. It bounds its input like a real upstream: a body over
 * {@link MAX_BODY_BYTES} is 413, a body that is not the expected JSON is 400, an unknown path 404,
 * a wrong method 405 — always an OpenAI-shaped JSON error, never a crash. No network beyond loopback.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { demoReply, type DemoReply } from './demo-script';

/** Largest request body read (an agent's whole conversation fits; more is 413). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Embedding size when the request names no `dimensions`. */
export const DEFAULT_DIMENSIONS = 64;
const MAX_DIMENSIONS = 4096;
const MAX_INPUTS = 2048;
const CHAT_MODEL = 'demo';
const EMBEDDING_MODEL = 'demo-embedding';

type Json = Record<string, unknown>;

class BadRequest extends Error {
  constructor(readonly status: number, message: string, readonly code = 'invalid_request') {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, code: string): void {
  sendJson(res, status, { error: { message, type: status === 404 ? 'not_found_error' : 'invalid_request_error', code } });
}

/** The request body as a JSON object; 413 over the limit, 400 for anything but a JSON object. */
async function readJsonObject(req: IncomingMessage): Promise<Json> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) throw new BadRequest(413, `Request body over ${MAX_BODY_BYTES} bytes`, 'request_too_large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(413, `Request body over ${MAX_BODY_BYTES} bytes`, 'request_too_large');
    chunks.push(chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest(400, 'The request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BadRequest(400, 'The request body must be a JSON object');
  return parsed as Json;
}

/** Deterministic token counts: a quarter of the characters, at least one. */
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function replyTokens(reply: DemoReply): number {
  return tokens(reply.kind === 'text' ? reply.text : reply.calls.map((c) => c.name + c.arguments).join(''));
}

/** The reply split into stream pieces: a few words per chunk (always the same split). */
function textPieces(text: string): string[] {
  const words = text.split(/(?<= )/);
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += 4) pieces.push(words.slice(i, i + 4).join(''));
  return pieces;
}

function chatCompletion(body: Json, res: ServerResponse): void {
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new BadRequest(400, "'messages' must be a non-empty array");
  if (body.tools !== undefined && !Array.isArray(body.tools)) throw new BadRequest(400, "'tools' must be an array");
  const reply = demoReply(body);
  const model = typeof body.model === 'string' ? body.model.slice(0, 200) : CHAT_MODEL;
  const conversation = JSON.stringify(body.messages);
  const id = `chatcmpl-demo-${createHash('sha256').update(conversation).digest('hex').slice(0, 16)}`;
  const promptTokens = tokens(conversation);
  const completionTokens = replyTokens(reply);
  const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  const finish = reply.kind === 'text' ? 'stop' : 'tool_calls';
  const toolCalls = reply.kind === 'tool_calls'
    ? reply.calls.map((c, index) => ({ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }))
    : undefined;
  if (body.stream !== true) {
    const message = reply.kind === 'text'
      ? { role: 'assistant', content: reply.text }
      : { role: 'assistant', content: null, tool_calls: toolCalls!.map(({ index: _index, ...call }) => call) };
    sendJson(res, 200, { id, object: 'chat.completion', created: 0, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = (choices: unknown[], extra: Json = {}) => res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model, choices, ...extra })}\n\n`);
  send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  if (reply.kind === 'text') {
    for (const piece of textPieces(reply.text)) send([{ index: 0, delta: { content: piece }, finish_reason: null }]);
  } else {
    for (const call of toolCalls!) {
      const half = Math.ceil(call.function.arguments.length / 2);
      send([{ index: 0, delta: { tool_calls: [{ ...call, function: { name: call.function.name, arguments: '' } }] }, finish_reason: null }]);
      for (const part of [call.function.arguments.slice(0, half), call.function.arguments.slice(half)]) {
        if (part) send([{ index: 0, delta: { tool_calls: [{ index: call.index, function: { arguments: part } }] }, finish_reason: null }]);
      }
    }
  }
  send([{ index: 0, delta: {}, finish_reason: finish }]);
  send([], { usage });
  res.end('data: [DONE]\n\n');
}

/** A unit vector derived from SHA-256 of the text: the same text always gets the same vector. */
export function hashVector(text: string, dimensions: number): number[] {
  const values: number[] = [];
  for (let block = 0; values.length < dimensions; block += 1) {
    const digest = createHash('sha256').update(`${block}\n${text}`).digest();
    for (let i = 0; i + 1 < digest.length && values.length < dimensions; i += 2) values.push(digest.readUInt16BE(i) / 32767.5 - 1);
  }
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0)) || 1;
  return values.map((v) => v / norm);
}

function embeddingInputs(input: unknown): string[] {
  const isTokens = (v: unknown) => Array.isArray(v) && v.every((n) => Number.isInteger(n));
  let inputs: unknown[];
  if (typeof input === 'string' || isTokens(input)) inputs = [input];
  else if (Array.isArray(input) && input.length > 0) inputs = input;
  else throw new BadRequest(400, "'input' must be a string, an array of strings, or token arrays");
  if (inputs.length > MAX_INPUTS) throw new BadRequest(400, `'input' has more than ${MAX_INPUTS} items`);
  return inputs.map((item) => {
    if (typeof item === 'string') return item;
    if (isTokens(item)) return (item as number[]).join(',');
    throw new BadRequest(400, "'input' must be a string, an array of strings, or token arrays");
  });
}

function embeddings(body: Json, res: ServerResponse): void {
  const inputs = embeddingInputs(body.input);
  const dimensions = body.dimensions ?? DEFAULT_DIMENSIONS;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_DIMENSIONS) {
    throw new BadRequest(400, `'dimensions' must be an integer from 1 to ${MAX_DIMENSIONS}`);
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') throw new BadRequest(400, "'encoding_format' must be 'float' or 'base64'");
  const data = inputs.map((text, index) => {
    const vector = hashVector(text, dimensions);
    const embedding = format === 'float' ? vector : Buffer.from(new Float32Array(vector).buffer).toString('base64');
    return { object: 'embedding', index, embedding };
  });
  const promptTokens = inputs.reduce((sum, text) => sum + tokens(text), 0);
  const model = typeof body.model === 'string' ? body.model.slice(0, 200) : EMBEDDING_MODEL;
  sendJson(res, 200, { object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } });
}

const ROUTES: Record<string, { method: string; handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void }> = {
  '/v1/chat/completions': { method: 'POST', handle: async (req, res) => chatCompletion(await readJsonObject(req), res) },
  '/v1/embeddings': { method: 'POST', handle: async (req, res) => embeddings(await readJsonObject(req), res) },
  '/v1/models': { method: 'GET', handle: (_req, res) => sendJson(res, 200, { object: 'list', data: [
    { id: CHAT_MODEL, object: 'model', created: 0, owned_by: 'demo', demo: true },
    { id: EMBEDDING_MODEL, object: 'model', created: 0, owned_by: 'demo', demo: true },
  ] }) },
  '/health': { method: 'GET', handle: (_req, res) => sendJson(res, 200, { status: 'ok', demo: true }) },
};

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  const route = ROUTES[path];
  try {
    if (!route) throw new BadRequest(404, `No route for ${req.method ?? ''} ${path.slice(0, 200)} on the demo upstream`, 'not_found');
    if (req.method !== route.method) throw new BadRequest(405, `${path} accepts ${route.method} only`, 'method_not_allowed');
    await route.handle(req, res);
  } catch (err) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof BadRequest) sendError(res, err.status, err.message, err.code);
    else sendError(res, 500, 'The demo upstream failed on this request', 'internal_error');
  }
}

/** A running demo upstream. */
export interface DemoUpstream {
  /** Base URL with `/v1`, as a registry's `base_url`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the demo upstream on 127.0.0.1:`port` (0: a free port). */
export async function startDemoUpstream(port = 0): Promise<DemoUpstream> {
  const server: Server = createServer((req, res) => void handle(req, res));
  // A client that drops mid-body must not take the process down.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/v1`,
    port: bound,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
