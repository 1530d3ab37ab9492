/**
 * A raw HTTP/1.1 request for tests of what the server does with a path as written: `fetch`
 * normalizes dot segments and refuses methods such as TRACE.
 */
import { request } from 'node:http';

export interface RawRequest {
  method: string;
  /** Sent as written (no normalization, no encoding). */
  path: string;
  authorization?: string | undefined;
  body?: string | Buffer;
  contentType?: string;
}

export interface RawAnswer {
  /** The status, or -1 when the connection was reset before an answer was read. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends one request to `base` (an origin) and reads the whole answer. */
export function rawRequest(base: string, options: RawRequest): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (options.authorization) headers.authorization = options.authorization;
    if (options.body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(options.body);
    }
    const req = request({ host: url.hostname, port: url.port, method: options.method, path: options.path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    // A server may answer (413) and close before reading a huge body: the answer is what counts.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve({ status: -1, headers: {}, body: err.code }) : reject(err)));
    req.end(options.body);
  });
}
