/**
 * The SSH server's bound on connections that have not logged in yet (docs/ssh.md "Connections
 * that never log in"). ssh2 only hands the server a connection once the client has sent its
 * identification line, so a socket that sends nothing would never be seen, nor closed: the guard
 * owns the TCP listener instead and gives every socket a login deadline from its first byte of
 * life. A socket still not authenticated at the deadline is destroyed (one log line: the client's
 * address and the bound). Past `maxPending` sockets waiting to log in, a new one is closed at once,
 * so idle or slow clients cannot take every file descriptor of the host runner.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../../lib/logger';

export interface LoginGuardOptions {
  /** How long a connection may stay unauthenticated, milliseconds. */
  loginTimeoutMs: number;
  /** Connections waiting to log in at once; a further one is closed on arrival. */
  maxPending: number;
  log: Logger;
  /** Hands an admitted socket to the SSH protocol (ssh2's `Server.injectSocket`). */
  admit: (socket: Socket) => void;
}

export interface LoginGuard {
  server: NetServer;
  /** The connection from `ip`:`port` has logged in: its deadline no longer applies. */
  loggedIn(ip: string | undefined, port: number | undefined): void;
  /** Destroys every connection still waiting to log in (the server is closing). */
  dropPending(): void;
}

/** The remote end of a connection; unique among the live connections of one listener. */
function peerKey(ip: string | undefined, port: number | undefined): string {
  return `${ip ?? ''}|${port ?? ''}`;
}

export function createLoginGuard(options: LoginGuardOptions): LoginGuard {
  const { log } = options;
  const pending = new Map<string, { socket: Socket; timer: NodeJS.Timeout }>();
  const server = createServer((socket) => {
    const client = socket.remoteAddress;
    if (pending.size >= options.maxPending || client === undefined) {
      log.info({ event: 'agent_ssh_refused', reason: 'too_many_unauthenticated', client, pending: pending.size }, 'ssh refused: too many connections are waiting to log in');
      socket.destroy();
      return;
    }
    const key = peerKey(client, socket.remotePort);
    const timer = setTimeout(() => {
      pending.delete(key);
      log.info({ event: 'agent_ssh_login_timeout', client, timeout_seconds: options.loginTimeoutMs / 1000 }, 'ssh connection closed: it did not log in in time');
      socket.destroy();
    }, options.loginTimeoutMs);
    pending.set(key, { socket, timer });
    socket.once('close', () => {
      clearTimeout(timer);
      if (pending.get(key)?.socket === socket) pending.delete(key);
    });
    // A reset by the peer before ssh2 listens would otherwise be an unhandled 'error'.
    socket.on('error', () => socket.destroy());
    options.admit(socket);
  });
  return {
    server,
    loggedIn: (ip, port) => {
      const key = peerKey(ip, port);
      const entry = pending.get(key);
      if (!entry) return;
      clearTimeout(entry.timer);
      pending.delete(key);
    },
    dropPending: () => {
      for (const { socket, timer } of pending.values()) {
        clearTimeout(timer);
        socket.destroy();
      }
      pending.clear();
    },
  };
}
