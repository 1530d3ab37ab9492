/**
 * The Docker engine: use a running one, else start `dockerd` in the background.
 */
import { request } from 'node:http';
import { BootstrapError, LOGS, say, startDetached, waitFor } from './sh';
import { join } from 'node:path';

export const DOCKER_SOCKET = '/var/run/docker.sock';

/** True when the engine answers `GET /_ping` on its socket. */
export function dockerPing(socketPath = DOCKER_SOCKET, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function ensureDockerd(): Promise<void> {
  if (await dockerPing()) return;
  say('starting dockerd');
  const logFile = startDetached('dockerd', 'dockerd', [], { asRoot: true });
  await waitFor('dockerd', () => dockerPing(), { timeoutMs: 60_000, logFile, what: `the engine socket ${DOCKER_SOCKET}` });
}

export function dockerdLog(): string {
  return join(LOGS, 'dockerd.log');
}

export { BootstrapError };
