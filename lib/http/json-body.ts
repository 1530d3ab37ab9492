/**
 * Reads a request body once as JSON with a size limit, and applies the text rule of lib/text.ts at
 * the door (docs/security.md): JSON nested deeper than {@link MAX_JSON_DEPTH} is a 400 before it
 * is parsed (no recursive walk after the parse, `JSON.stringify` included, can overflow the stack);
 * a string value or key holding a NUL or an unpaired surrogate is a 400 naming its dotted path.
 * Malformed JSON is a 400 naming the problem; a body over the limit is a 413, sent as soon as the
 * limit is passed, and the rest of the body is drained so the client reads it (refused-body.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { AppError } from '../errors';
import { cleanText, describeTextProblem, findBadText, jsonDepthExceeds, MAX_JSON_DEPTH, textProblem } from '../text';
import { drainRefusedBody } from './refused-body';

/** The 413 for a body over `limitBytes`; the rest of the body is drained and the connection closed. */
function tooLarge(req: IncomingMessage, limitBytes: number): AppError {
  drainRefusedBody(req);
  return new AppError('payload_too_large', `Request body is larger than ${limitBytes} bytes`, { headers: { Connection: 'close' } });
}

/** Collects the raw body, failing with 413 as soon as it passes `limitBytes`. */
function collect(req: IncomingMessage, limitBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        reject(tooLarge(req, limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(size === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * What happens to a string value or key that breaks the text rule:
 * - `refuse` (the default): 400 naming its dotted path. Every input a person or client types.
 * - `replace`: each bad character becomes U+FFFD (lib/text.ts `cleanText`), for text a service
 *   relays and must not lose, such as a host runner's sandbox output in agent events.
 * - `forward`: strings are not walked. The inference surfaces: message content goes upstream
 *   unchanged and is never stored, and they check the few fields they log (`model`) themselves,
 *   so the hot path scans a body once (the depth bound) and walks it no further.
 */
export type BodyTextPolicy = 'refuse' | 'replace' | 'forward';

export interface JsonBodyOptions {
  text?: BodyTextPolicy;
}

/**
 * Reads and parses the JSON body (`undefined` for an empty body). Depth is bounded before the
 * parse; strings and keys then follow `options.text` (default `refuse`).
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number, options: JsonBodyOptions = {}): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(req, limitBytes);
  const raw = await collect(req, limitBytes);
  if (raw === undefined) return undefined;
  if (jsonDepthExceeds(raw, MAX_JSON_DEPTH)) {
    throw new AppError('invalid_request', `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const text = raw.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch (err) {
    // V8 quotes the text around the fault, which may hold the very bytes the rule refuses.
    throw new AppError('invalid_request', `Request body is not valid JSON: ${cleanText((err as Error).message)}`, { cause: err });
  }
  const policy = options.text ?? 'refuse';
  if (policy === 'refuse') assertCleanText(body);
  else if (policy === 'replace' && findBadText(body) !== undefined) return parseCleaned(text);
  return body;
}

/** `text` parsed with every bad string value and key replaced visibly (bottom-up; depth is bounded). */
function parseCleaned(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value === 'string') return cleanText(value);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.some(([key]) => textProblem(key) !== undefined) ? Object.fromEntries(entries.map(([key, v]) => [cleanText(key), v])) : value;
  }) as unknown;
}

/** Throws the 400 naming the first string value or key of `body` that breaks the text rule. */
export function assertCleanText(body: unknown): void {
  const bad = findBadText(body);
  if (bad === undefined) return;
  const problem = describeTextProblem(bad.problem);
  if (bad.path === '') throw new AppError('invalid_request', `Invalid request body: ${problem}`);
  // A bad key is part of its own path: the path is shown (and logged) with the visible replacement.
  const path = cleanText(bad.path);
  throw new AppError('invalid_request', `Invalid field '${path}': ${problem}`, { param: path });
}

/** Validates a parsed body with a zod schema; the 400 names the first failing field. */
export function validateBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.');
  const message = field ? `Invalid field '${field}': ${issue.message}` : `Invalid request body: ${issue.message}`;
  throw new AppError('invalid_request', message, field ? { param: field } : {});
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
