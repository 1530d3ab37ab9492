/**
 * HTTP to a forge, bounded (docs/forges.md "Answers are untrusted"): every call has a deadline,
 * an answer body is read up to a byte limit and no further, JSON is parsed with a depth bound and
 * checked by a schema and the shared text rule, and a failure becomes a {@link ForgeError} whose
 * message holds no credential (long token-like runs are masked) and at most a short excerpt.
 */
import type { z } from 'zod';
import { cleanText, findBadText, jsonDepthExceeds } from '../../lib/text';
import { ForgeError, type ForgeFailure } from './forge';

/** Limits of one forge call. */
export interface ForgeHttpLimits {
  /** Deadline of the whole call (connect, headers and body), ms. */
  timeoutMs: number;
  /** Largest answer body read, bytes. */
  maxBodyBytes: number;
}

export const DEFAULT_FORGE_LIMITS: ForgeHttpLimits = { timeoutMs: 15_000, maxBodyBytes: 1024 * 1024 };

/** Masks runs that look like credentials (20+ token characters), cleans and bounds a forge's text for a message. */
export function safeExcerpt(text: string, max = 200): string {
  const masked = cleanText(text).replace(/[A-Za-z0-9_+/=.-]{20,}/g, '***');
  return masked.length > max ? `${masked.slice(0, max)}…` : masked;
}

/** The failure a forge's HTTP status means. */
export function failureOfStatus(status: number): ForgeFailure {
  if (status === 401 || status === 403 || status === 409 || status === 422) return 'refused';
  if (status === 404) return 'not_found';
  if (status === 429 || status >= 500) return 'unavailable';
  return 'bad_answer';
}

async function readBounded(response: Response, maxBytes: number, what: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new ForgeError('bad_answer', `${what}: the forge's answer is larger than ${maxBytes} bytes`, response.status);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
  if (!reader) return new Uint8Array();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new ForgeError('bad_answer', `${what}: the forge's answer is larger than ${maxBytes} bytes`, response.status);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * A `fetch` with the limits applied: the answer comes back fully read (bounded) into a new
 * `Response`; a network failure or the deadline is a `ForgeError('unavailable')`. Usable as
 * Octokit's `request.fetch`.
 */
export function boundedFetch(what: string, limits: ForgeHttpLimits = DEFAULT_FORGE_LIMITS): typeof fetch {
  return async (input, init) => {
    const deadline = AbortSignal.timeout(limits.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    let response: Response;
    let body: Uint8Array;
    try {
      response = await fetch(input, { ...init, signal, redirect: 'manual' });
      body = await readBounded(response, limits.maxBodyBytes, what);
    } catch (err) {
      if (err instanceof ForgeError) throw err;
      const reason = deadline.aborted ? `no answer within ${limits.timeoutMs} ms` : safeExcerpt(String((err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message));
      throw new ForgeError('unavailable', `${what}: the forge did not answer (${reason})`);
    }
    const nullBody = response.status === 204 || response.status === 304;
    return new Response(nullBody ? null : body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** Parses and checks a forge's JSON answer; anything unexpected is a `ForgeError('bad_answer')`. */
export function parseForgeJson<S extends z.ZodType>(bytes: Uint8Array, schema: S, what: string): z.output<S> {
  if (jsonDepthExceeds(bytes)) throw new ForgeError('bad_answer', `${what}: the forge's answer nests too deep`);
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new ForgeError('bad_answer', `${what}: the forge's answer is not JSON`);
  }
  return checkForgeValue(value, schema, what);
}

/** Checks an already parsed answer (an HTTP client that parses for itself): the text rule, then the schema. */
export function checkForgeValue<S extends z.ZodType>(value: unknown, schema: S, what: string): z.output<S> {
  const bad = findBadText(value);
  if (bad) throw new ForgeError('bad_answer', `${what}: the forge's answer has unusable text at ${bad.path || '(root)'} (${bad.problem})`);
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ForgeError('bad_answer', `${what}: the forge's answer is not as expected (${issue ? `${issue.path.join('.') || '(root)'}: ${safeExcerpt(issue.message, 120)}` : 'invalid'})`);
  }
  return parsed.data;
}

/** The error of a non-2xx answer: the status, and the forge's `message` field as a safe excerpt. */
export function statusError(what: string, status: number, bytes: Uint8Array): ForgeError {
  let said = '';
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as { message?: unknown };
    if (typeof value.message === 'string') said = `: ${safeExcerpt(value.message)}`;
  } catch {
    said = '';
  }
  return new ForgeError(failureOfStatus(status), `${what}: the forge answered ${status}${said}`, status);
}
