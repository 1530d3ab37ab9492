/**
 * `npm start` refuses to start when a port it would listen on is taken (another `npm start`, or
 * anything else), before it builds or prints that the stack is up, naming the port and the
 * variable that moves it; otherwise the gateway or the API would die later with a bare EADDRINUSE.
 */
import { createServer } from 'node:net';

export interface PlannedPort {
  /** Which process listens there (`gateway`, `api`). */
  name: string;
  host: string;
  port: number;
  /** The environment variable that moves it (`GATEWAY_PORT`, `API_PORT`). */
  variable: string;
}

/** Whether `host:port` can be bound now (it is released again at once). */
export function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(false);
      else reject(err);
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Throws one message naming every taken port and its variable; resolves when all are free. */
export async function assertPortsFree(ports: readonly PlannedPort[]): Promise<void> {
  const taken: PlannedPort[] = [];
  for (const planned of ports) if (!(await portIsFree(planned.host, planned.port))) taken.push(planned);
  if (taken.length === 0) return;
  const list = taken.map((p) => `${p.name} port ${p.port} (${p.variable})`).join(', ');
  const example = taken.map((p) => `${p.variable}=${p.port + 10}`).join(' ');
  throw new Error(`${list} ${taken.length === 1 ? 'is' : 'are'} already in use, perhaps by another npm start. Stop it, or move this stack: ${example} npm start`);
}
