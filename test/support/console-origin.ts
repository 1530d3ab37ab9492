/**
 * One origin for console tests while the gateway does not yet forward the agent API
 * (TODO(one-origin): remove once the gateway's `GATEWAY_AGENT_API_URL` forwarding is on main and
 * the console tests set it instead). A plain HTTP relay on 127.0.0.1: `/v1/agent/*` and
 * `/admin/agent/*` go to the control-plane API, everything else to the gateway. Bodies are piped
 * both ways without buffering, so server-sent events stream through as they are written.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The relay's origin and how to stop it. */
export interface ConsoleOrigin {
  url: string;
  close(): Promise<void>;
}

function target(path: string, gatewayUrl: string, apiUrl: string): URL {
  const base = path.startsWith('/v1/agent/') || path.startsWith('/admin/agent/') ? apiUrl : gatewayUrl;
  return new URL(path, base);
}

/** Starts the relay in front of a gateway and an API. */
export async function startConsoleOrigin(gatewayUrl: string, apiUrl: string): Promise<ConsoleOrigin> {
  const server: Server = createServer((req: IncomingMessage, res) => {
    const url = target(req.url ?? '/', gatewayUrl, apiUrl);
    const upstream = request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
