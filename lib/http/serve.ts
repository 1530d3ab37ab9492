/**
 * Starts a Koa app on a port and returns a handle whose `close` drains it: stop accepting,
 * close idle keep-alive sockets, let in-flight requests finish, then cut what is left.
 */
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface Serving {
  server: Server;
  port: number;
  url: string;
  /** Drains within `graceMs`, then destroys remaining connections. */
  close(graceMs?: number): Promise<void>;
}

/** A request listener that wants its responses made by its own `ServerResponse` subclass. */
export type ListenerWithResponses = RequestListener & { responseClass?: typeof ServerResponse };

/**
 * Listens on `host:port` (port 0 picks a free one); takes a Koa app or a request listener (whose
 * `responseClass`, when it has one, makes every response: the gateway's held ends).
 */
export async function serve(app: Koa | ListenerWithResponses, options: { host: string; port: number }): Promise<Serving> {
  const server = typeof app === 'function'
    ? createServer(app.responseClass ? { ServerResponse: app.responseClass } : {}, app)
    : createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0; // streams may run long; deadlines are enforced per request by the handlers
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    server,
    port,
    url: `http://${shownHost}:${port}`,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
