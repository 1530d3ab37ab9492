/**
 * One request through the model relay (model-relay.ts): the CLI's request, its body already read
 * (bounded), is sent on, retried by the relay's policy while the answer is retryable and nothing
 * of it went to the CLI (relay-retry.ts), and the answer that ends it streams back unbuffered.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { sendWithRetries, type RelayRetryOptions, type RelayTry } from './relay-retry';

/** Response headers not passed back (hop-by-hop). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

export interface RelayCall {
  method: string;
  url: URL;
  headers: OutgoingHttpHeaders;
  body: Buffer;
  /** Who is called, for the CLI's error message (`gateway`, `tool relay`). */
  what: string;
  /** The retry policy; absent: one try. */
  policy?: RelayRetryOptions;
}

export function refuse(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { type: 'relay_refused', message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** The request's body, or undefined once it exceeds `max` bytes (the rest is not read). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        resolve(undefined);
        return;
      }
      parts.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(parts, size)));
    req.on('error', reject);
  });
}

/**
 * Sends `call` (with its retries) and passes the final answer to `res`. Resolves with the reason
 * the relay gave up retrying, if it did.
 */
export async function forward(call: RelayCall, res: ServerResponse): Promise<string | undefined> {
  const abort = new AbortController();
  // The CLI went away (or the relay closed): stop waiting, and stop the call in flight.
  res.on('close', () => abort.abort());
  const send = () => sendOnce(call, abort.signal);
  const outcome = call.policy
    ? await sendWithRetries(send, discard, call.policy, abort.signal).catch(() => undefined)
    : { value: (await send()).value };
  if (!outcome || abort.signal.aborted) {
    if (outcome) discard(outcome.value);
    return undefined;
  }
  const answer = outcome.value;
  if (answer instanceof Error) {
    refuse(res, 502, `The model relay could not reach the ${call.what}${outcome.gaveUp ? ` (${outcome.gaveUp})` : ''}`);
    return outcome.gaveUp;
  }
  const back: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
  res.writeHead(answer.statusCode ?? 502, back);
  answer.on('error', () => res.destroy());
  answer.pipe(res);
  return outcome.gaveUp;
}

/** Drops a retried answer's body. */
function discard(value: IncomingMessage | Error | undefined): void {
  if (value && !(value instanceof Error)) value.resume();
}

/** One try: the gateway's answer (head only; the body is not read yet) or the connection error. */
function sendOnce(call: RelayCall, signal: AbortSignal): Promise<RelayTry<IncomingMessage | Error>> {
  return new Promise((resolve) => {
    const requestFn = call.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const upstream = requestFn(call.url, { method: call.method, headers: call.headers, signal }, (answer) => {
      const status = answer.statusCode ?? 502;
      const retryAfter = answer.headers['retry-after'];
      resolve({ value: answer, status, ...(typeof retryAfter === 'string' ? { retryAfter } : {}), reason: `HTTP ${status}` });
    });
    // Before an answer: a connection error, retryable. (Once an answer came, its own 'error' ends the CLI's stream.)
    upstream.on('error', (err) => {
      resolve({ value: err, status: null, reason: `a connection error (${err.message})` });
    });
    upstream.end(call.body);
  });
}
