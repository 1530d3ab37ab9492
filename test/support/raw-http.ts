/**
 * A raw HTTP/1.1 client on a `net` socket for what fetch hides: it sends a large body with
 * `Connection: close` and reads nothing until every byte is written (like curl and most simple
 * clients), then reads the whole answer. A server that closes with unread bytes resets the
 * connection, and this client then reports the write error instead of an answer.
 */
import { connect } from 'node:net';

export interface LargeBodyOptions {
  /** Server base URL (`http://127.0.0.1:port`). */
  url: string;
  path: string;
  bytes: number;
  /** `chunked` sends no Content-Length; `declared` announces the size up front. */
  framing: 'declared' | 'chunked';
  headers?: Record<string, string>;
}

export interface RawOutcome {
  /** What the server sent, as latin1 text (head and body). */
  response: string;
  /** The socket error, when the connection failed (e.g. `EPIPE`, `ECONNRESET`). */
  error?: string;
}

/** Writes `bytes` of JSON-ish filler (spaces) as the body, then reads the answer. */
export function sendLargeBody(options: LargeBodyOptions): Promise<RawOutcome> {
  const { hostname, port } = new URL(options.url);
  const extra = Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const framing = options.framing === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${options.bytes}\r\n`;
  const head = `POST ${options.path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n${framing}${extra}Connection: close\r\n\r\n`;
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.pause();
    const received: Buffer[] = [];
    const outcome = (error?: string): RawOutcome => ({ response: Buffer.concat(received).toString('latin1'), ...(error ? { error } : {}) });
    socket.on('data', (data: Buffer) => received.push(data));
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(outcome(err.code ?? err.message)));
    socket.on('close', () => resolve(outcome()));
    socket.write(head);
    let sent = 0;
    const pump = (): void => {
      while (sent < options.bytes) {
        const piece = chunk.subarray(0, Math.min(chunk.length, options.bytes - sent));
        sent += piece.length;
        const data = options.framing === 'chunked' ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
        if (!socket.write(data)) {
          socket.once('drain', pump);
          return;
        }
      }
      socket.write(options.framing === 'chunked' ? '0\r\n\r\n' : '', () => socket.resume());
    };
    pump();
  });
}

/** The status code of a raw response, or undefined when none arrived. */
export function statusOf(response: string): number | undefined {
  const match = /^HTTP\/1\.1 (\d{3}) /.exec(response);
  return match ? Number(match[1]) : undefined;
}
