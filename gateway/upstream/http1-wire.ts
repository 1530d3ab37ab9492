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
  /** Header names and values in order, for an answer of status 300 or more (refused answers read it); empty below. */
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
  // The head is read by offset, byte by byte: no string per line or per header. Only the values
  // that decide framing and reuse are decoded, and every header of a refused answer (its list).
  let eol = lineEnd(buf, 0, end);
  const statusCode = statusOf(buf, eol);
  if (statusCode === undefined) return new Http1Error('malformed status line', 'UND_ERR_SOCKET');
  const head: ResponseHead = {
    statusCode, keepAlive: buf[7] === DIGIT_1, length: undefined, chunked: false, keepAliveHintMs: undefined, raw: [], bodyStart: end + 4,
  };
  const listAll = statusCode >= 300;
  for (let at = eol + 2; at < end; at = eol + 2) {
    eol = lineEnd(buf, at, end);
    let colon = at;
    while (colon < eol && buf[colon] !== COLON) colon += 1;
    if (colon === at || colon === eol) return new Http1Error('malformed header line', 'UND_ERR_SOCKET');
    // Name and value without the characters String#trim would remove.
    let nameStart = at;
    let nameEnd = colon;
    while (nameStart < nameEnd && isSpace(buf[nameStart]!)) nameStart += 1;
    while (nameEnd > nameStart && isSpace(buf[nameEnd - 1]!)) nameEnd -= 1;
    let valueStart = colon + 1;
    let valueEnd = eol;
    while (valueStart < valueEnd && isSpace(buf[valueStart]!)) valueStart += 1;
    while (valueEnd > valueStart && isSpace(buf[valueEnd - 1]!)) valueEnd -= 1;
    if (listAll) head.raw.push(buf.toString('latin1', nameStart, nameEnd), buf.toString('latin1', valueStart, valueEnd));
    // Only four headers matter for framing and reuse; their lengths sort out the rest cheaply.
    switch (nameEnd - nameStart) {
      case 14:
        if (spellsLower(buf, nameStart, 'content-length')) {
          const parsed = decimalOf(buf, valueStart, valueEnd);
          if (parsed === undefined || (head.length !== undefined && head.length !== parsed)) return new Http1Error('invalid Content-Length', 'UND_ERR_SOCKET');
          head.length = parsed;
        }
        break;
      case 17:
        if (spellsLower(buf, nameStart, 'transfer-encoding')) head.chunked = /(?:^|,)\s*chunked$/i.test(buf.toString('latin1', valueStart, valueEnd));
        break;
      case 10:
        if (spellsLower(buf, nameStart, 'connection')) {
          const reuse = connectionReuse(buf, valueStart, valueEnd);
          if (reuse !== undefined) head.keepAlive = reuse;
        } else if (spellsLower(buf, nameStart, 'keep-alive')) {
          const seconds = keepAliveTimeout(buf, valueStart, valueEnd);
          if (seconds !== undefined) head.keepAliveHintMs = seconds * 1000;
        }
        break;
      default:
    }
  }
  if (head.statusCode === 101) return new Http1Error('unexpected protocol switch', 'UND_ERR_SOCKET');
  if (head.chunked && head.length !== undefined) return new Http1Error('both Content-Length and chunked framing', 'UND_ERR_SOCKET');
  return head;
}

const COLON = 0x3a;
const SPACE = 0x20;
const DIGIT_0 = 0x30;
const DIGIT_1 = 0x31;
const DIGIT_9 = 0x39;
const STATUS_PREFIX = Buffer.from('HTTP/1.');

/** Where the line starting at `from` ends (its CR), or `end` for the head's last line. */
function lineEnd(buf: Buffer, from: number, end: number): number {
  for (let i = from; i < end; i += 1) if (buf[i] === CR && buf[i + 1] === LF) return i;
  return end;
}

/** The status of a line `HTTP/1.<0|1> <3 digits>[ <reason without CR or LF>]` ending at `eol`, else undefined. */
function statusOf(buf: Buffer, eol: number): number | undefined {
  if (eol < 12) return undefined;
  for (let i = 0; i < STATUS_PREFIX.length; i += 1) if (buf[i] !== STATUS_PREFIX[i]) return undefined;
  if ((buf[7] !== DIGIT_0 && buf[7] !== DIGIT_1) || buf[8] !== SPACE || (eol > 12 && buf[12] !== SPACE)) return undefined;
  let status = 0;
  for (let i = 9; i < 12; i += 1) {
    const b = buf[i]!;
    if (b < DIGIT_0 || b > DIGIT_9) return undefined;
    status = status * 10 + (b - DIGIT_0);
  }
  for (let i = 13; i < eol; i += 1) if (buf[i] === CR || buf[i] === LF) return undefined;
  return status;
}

/** The characters `String#trim` removes that a latin1 byte can be: tab, LF, VT, FF, CR, space, NBSP. */
function isSpace(b: number): boolean {
  return b === SPACE || (b >= 0x09 && b <= 0x0d) || b === 0xa0;
}

/** Whether the bytes at `from` spell `lower` (lowercase ASCII: a header name or token) in any case; the length is checked by the caller. */
function spellsLower(buf: Buffer, from: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i += 1) {
    const b = buf[from + i]!;
    if ((b >= 0x41 && b <= 0x5a ? b | 0x20 : b) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** What a `Connection` value says about reuse: false for a `close` token, true for `keep-alive`, else undefined. */
function connectionReuse(buf: Buffer, from: number, to: number): boolean | undefined {
  // The values servers send, decided without a string; lists and odd spacing take the patterns.
  if (to - from === 10 && spellsLower(buf, from, 'keep-alive')) return true;
  if (to - from === 5 && spellsLower(buf, from, 'close')) return false;
  const value = buf.toString('latin1', from, to);
  if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) return false;
  if (/(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) return true;
  return undefined;
}

/** The seconds of a `Keep-Alive` value's `timeout=`, when given. */
function keepAliveTimeout(buf: Buffer, from: number, to: number): number | undefined {
  // `timeout=<digits>` first, as servers send it, read in place; anything else takes the pattern.
  if (to - from > 8 && spellsLower(buf, from, 'timeout=')) {
    let digits = from + 8;
    while (digits < to && digits - from < 17 && buf[digits]! >= DIGIT_0 && buf[digits]! <= DIGIT_9) digits += 1;
    if (digits > from + 8 && digits - from < 17) return decimalOf(buf, from + 8, digits);
  }
  const timeout = /timeout\s*=\s*(\d+)/i.exec(buf.toString('latin1', from, to));
  return timeout ? Number(timeout[1]) : undefined;
}

/** One to fifteen ASCII digits as a number, else undefined. */
function decimalOf(buf: Buffer, from: number, to: number): number | undefined {
  if (to <= from || to - from > 15) return undefined;
  let n = 0;
  for (let i = from; i < to; i += 1) {
    const b = buf[i]!;
    if (b < DIGIT_0 || b > DIGIT_9) return undefined;
    n = n * 10 + (b - DIGIT_0);
  }
  return n;
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
