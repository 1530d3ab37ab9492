/**
 * The HTTP/1.1 wire format of the lean upstream client (`http1-pool.ts`), as pure functions over
 * bytes: the request head, the response head, and a chunk-size line. No sockets or state here.
 */

/** An error with a code, like undici's (`UND_ERR_*`) or the socket's (`ECONNRESET`). */
export class Http1Error extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
    this.name = 'Http1Error';
  }
}

/** The largest response head, chunk-size line or trailer line accepted. */
export const MAX_HEAD_BYTES = 64 * 1024;
export const CRLF = Buffer.from('\r\n');
export const CR = 13;
export const LF = 10;
const CRLF_CRLF = Buffer.from('\r\n\r\n');
const SAFE_HEADER_VALUE = /^[^\r\n\0]*$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Validated header lines by headers object (the upstream client reuses one, never changed, per route and key). */
const headerBlocks = new WeakMap<Record<string, string>, string>();

/** `name: value\r\n` for every header, or an error for a name that is not a token or a value with CR, LF or NUL. */
function headerLines(headers: Record<string, string>): string | Http1Error {
  let lines = headerBlocks.get(headers);
  if (lines !== undefined) return lines;
  lines = '';
  for (const name in headers) {
    const value = headers[name]!;
    if (!TOKEN.test(name) || !SAFE_HEADER_VALUE.test(value)) return new Http1Error(`invalid request header ${JSON.stringify(name)}`, 'UND_ERR_INVALID_ARG');
    lines += `${name}: ${value}\r\n`;
  }
  headerBlocks.set(headers, lines);
  return lines;
}

/** The request head (through its blank line) for a body of `body`, or an error for an unsafe header. */
export function requestHead(method: string, path: string, host: string, headers: Record<string, string>, body: string): string | Http1Error {
  const lines = headerLines(headers);
  if (lines instanceof Http1Error) return lines;
  return `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n${lines}content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
}

export interface ResponseHead {
  statusCode: number;
  /** Whether the connection may carry another request (HTTP/1.1 default, `Connection` header). */
  keepAlive: boolean;
  /** `Content-Length`, when given. */
  length: number | undefined;
  chunked: boolean;
  /** The server's `Keep-Alive: timeout=` in milliseconds, when given. */
  keepAliveHintMs: number | undefined;
  /** Header names and values in order (read only for refused answers). */
  raw: string[];
  /** Offset of the first body byte in the buffer. */
  bodyStart: number;
}

/**
 * The response head at the start of `buf`: undefined while incomplete, an error when malformed
 * (bad status line or header line, invalid or conflicting `Content-Length`, both length and
 * chunked framing, a head over {@link MAX_HEAD_BYTES}).
 */
export function parseResponseHead(buf: Buffer): ResponseHead | Http1Error | undefined {
  const end = buf.indexOf(CRLF_CRLF);
  if (end === -1 || end > MAX_HEAD_BYTES) {
    return end > MAX_HEAD_BYTES || buf.length > MAX_HEAD_BYTES ? new Http1Error('response head larger than 64 KiB', 'UND_ERR_HEADERS_OVERFLOW') : undefined;
  }
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const status = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
  if (!status) return new Http1Error('malformed status line', 'UND_ERR_SOCKET');
  const head: ResponseHead = {
    statusCode: Number(status[2]), keepAlive: status[1] === '1', length: undefined, chunked: false, keepAliveHintMs: undefined, raw: [], bodyStart: end + 4,
  };
  for (let i = 1; i < lines.length; i += 1) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) return new Http1Error('malformed header line', 'UND_ERR_SOCKET');
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    head.raw.push(name, value);
    // Only four headers matter for framing and reuse; their lengths sort out the rest cheaply.
    switch (name.length) {
      case 14:
        if (name.toLowerCase() === 'content-length') {
          const parsed = /^\d{1,15}$/.test(value) ? Number(value) : NaN;
          if (Number.isNaN(parsed) || (head.length !== undefined && head.length !== parsed)) return new Http1Error('invalid Content-Length', 'UND_ERR_SOCKET');
          head.length = parsed;
        }
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') head.chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
        break;
      case 10: {
        const lower = name.toLowerCase();
        if (lower === 'connection') {
          if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) head.keepAlive = false;
          else if (/(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) head.keepAlive = true;
        } else if (lower === 'keep-alive') {
          const timeout = /timeout\s*=\s*(\d+)/i.exec(value);
          if (timeout) head.keepAliveHintMs = Number(timeout[1]) * 1000;
        }
        break;
      }
      default:
    }
  }
  if (head.statusCode === 101) return new Http1Error('unexpected protocol switch', 'UND_ERR_SOCKET');
  if (head.chunked && head.length !== undefined) return new Http1Error('both Content-Length and chunked framing', 'UND_ERR_SOCKET');
  return head;
}

/** The value of a hex digit's byte, or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * A chunk-size line at offset `from` of `buf`, read in place (hex digits from the bytes, no string
 * per chunk; `;extensions` and spaces up to the CRLF skipped): the size and the offset after the
 * line, undefined while incomplete, or an error.
 */
export function parseChunkSize(buf: Buffer, from = 0): { size: number; next: number } | Http1Error | undefined {
  let size = 0;
  let i = from;
  for (; i < buf.length; i += 1) {
    const digit = hexDigit(buf[i]!);
    if (digit < 0) break;
    if (i - from === 8) return new Http1Error('chunk size too large', 'UND_ERR_SOCKET');
    size = size * 16 + digit;
  }
  if (i === buf.length) return undefined; // more digits may follow
  if (i === from) return new Http1Error('malformed chunk size', 'UND_ERR_SOCKET');
  if (buf[i] === CR && buf[i + 1] === LF) return { size, next: i + 2 };
  const c = buf[i];
  if (c !== 59 /* ; */ && c !== 32 && c !== 9 && c !== CR) return new Http1Error('malformed chunk size', 'UND_ERR_SOCKET');
  const eol = buf.indexOf(CRLF, i);
  if (eol === -1) return buf.length - from > MAX_HEAD_BYTES ? new Http1Error('chunk framing line too long', 'UND_ERR_SOCKET') : undefined;
  return { size, next: eol + 2 };
}
