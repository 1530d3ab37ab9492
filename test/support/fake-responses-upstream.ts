/**
 * A fake Responses-API upstream: a real HTTP server on 127.0.0.1:0 answering `POST …/responses`
 * with scripted output items, streamed as the Responses API streams them (`response.created`,
 * `response.in_progress`, per item `output_item.added`, its deltas and `.done` events,
 * `output_item.done`, then `response.completed` with usage; every event numbered) or as one
 * `response` object. Records every request.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

type Json = Record<string, unknown>;

/** One scripted answer. */
export interface ResponsesReply {
  /** Output items, complete (`message` items carry their text in `content[0].text`). */
  output: Json[];
  usage?: { input_tokens: number; output_tokens: number; cached_tokens?: number };
  /** Streaming only: write this many events, then reset the connection. */
  resetAfterEvents?: number;
  /** Streaming only: write every event in pieces of this many bytes, each its own write. */
  byteSlices?: number;
}

export interface RecordedResponsesRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
  rawBody: string;
}

export interface FakeResponsesUpstream {
  /** Base URL including `/v1`. */
  readonly url: string;
  readonly requests: RecordedResponsesRequest[];
  /** Sets how each request is answered (by the request and its 1-based number). */
  script(reply: (request: RecordedResponsesRequest, n: number) => ResponsesReply): void;
  close(): Promise<void>;
}

function usageOf(reply: ResponsesReply): Json {
  const u = reply.usage ?? { input_tokens: 20, output_tokens: 5 };
  return {
    input_tokens: u.input_tokens, input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
    output_tokens: u.output_tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input_tokens + u.output_tokens,
  };
}

/** The stream events of one answer, in the Responses API's order. */
export function responsesEvents(id: string, model: string, reply: ResponsesReply): Array<[string, Json]> {
  const events: Array<[string, Json]> = [];
  const base = { id, object: 'response', created_at: 1, model, error: null, incomplete_details: null };
  events.push(['response.created', { response: { ...base, status: 'in_progress', output: [], usage: null } }]);
  events.push(['response.in_progress', { response: { ...base, status: 'in_progress', output: [], usage: null } }]);
  reply.output.forEach((item, i) => {
    const where = { item_id: item.id, output_index: i };
    if (item.type === 'message') {
      const text = ((item.content as Json[])[0]?.text as string | undefined) ?? '';
      events.push(['response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', content: [] } }]);
      events.push(['response.content_part.added', { ...where, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }]);
      for (const piece of [text.slice(0, 4), text.slice(4)]) if (piece) events.push(['response.output_text.delta', { ...where, content_index: 0, delta: piece }]);
      events.push(['response.output_text.done', { ...where, content_index: 0, text }]);
      events.push(['response.content_part.done', { ...where, content_index: 0, part: { type: 'output_text', text, annotations: [] } }]);
    } else if (item.type === 'function_call') {
      events.push(['response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', arguments: '' } }]);
      events.push(['response.function_call_arguments.delta', { ...where, delta: item.arguments }]);
      events.push(['response.function_call_arguments.done', { ...where, arguments: item.arguments }]);
    } else {
      events.push(['response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress' } }]);
    }
    events.push(['response.output_item.done', { output_index: i, item: { ...item, status: 'completed' } }]);
  });
  events.push(['response.completed', { response: { ...base, status: 'completed', output: reply.output, usage: usageOf(reply) } }]);
  return events;
}

export async function startFakeResponsesUpstream(): Promise<FakeResponsesUpstream> {
  const requests: RecordedResponsesRequest[] = [];
  const sockets = new Set<Socket>();
  let scripted: (request: RecordedResponsesRequest, n: number) => ResponsesReply = () => ({ output: [] });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const record: RecordedResponsesRequest = { path: req.url ?? '/', headers: req.headers, body: JSON.parse(rawBody || '{}') as Json, rawBody };
      requests.push(record);
      if (!record.path.endsWith('/responses')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${record.path}`, type: 'invalid_request_error' } }));
        return;
      }
      const reply = scripted(record, requests.length);
      const id = `resp_up_${requests.length}`;
      const model = String(record.body.model);
      if (record.body.stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id, object: 'response', created_at: 1, model, status: 'completed', output: reply.output, usage: usageOf(reply), error: null }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = responsesEvents(id, model, reply);
      void (async () => {
        for (const [n, [type, payload]] of events.entries()) {
          if (reply.resetAfterEvents !== undefined && n === reply.resetAfterEvents) {
            await new Promise((r) => setTimeout(r, 50)); // the events written so far reach the client first
            res.socket?.destroy();
            return;
          }
          const frame = Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...payload })}\n\n`);
          const size = reply.byteSlices ?? frame.length;
          for (let at = 0; at < frame.length; at += size) {
            res.write(frame.subarray(at, at + size));
            if (reply.byteSlices !== undefined) await new Promise((r) => setImmediate(r));
          }
        }
        res.end();
      })();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (reply) => {
      scripted = reply;
    },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
