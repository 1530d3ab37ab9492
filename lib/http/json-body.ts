/**
 * Reads a request body once as JSON with a size limit. Malformed JSON is a 400 naming the
 * problem; a body over the limit is a 413 and reading stops as soon as the limit is passed.
 */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { AppError } from '../errors';

/** Collects the raw body, failing with 413 as soon as it passes `limitBytes`. */
function collect(req: IncomingMessage, limitBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.resume();
        reject(new AppError('payload_too_large', `Request body is larger than ${limitBytes} bytes`));
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

/** Reads and parses the JSON body (`undefined` for an empty body). */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    throw new AppError('payload_too_large', `Request body is larger than ${limitBytes} bytes`);
  }
  const raw = await collect(req, limitBytes);
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (err) {
    throw new AppError('invalid_request', `Request body is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
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
