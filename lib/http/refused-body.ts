/**
 * A body refused before it was read (413 on its size) is still on its way when the answer goes
 * out. Node closes a `Connection: close` socket as soon as the response is flushed, and a socket
 * closed with unread bytes makes the kernel send a reset: a client that writes its whole body
 * before reading (curl, most simple clients) then gets ECONNRESET or EPIPE instead of the 413.
 *
 * So the refused body is read and thrown away, within bounds, and the socket is closed gracefully:
 * the response is flushed and half-closed (FIN) as usual, and the socket is destroyed only once the
 * body has fully arrived (nothing unread: a clean close), the client closed its side, or
 * {@link DRAIN_MAX_BYTES} more bytes or {@link DRAIN_MAX_MS} have passed (a client still sending
 * then is reset). See docs/security.md.
 */
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/** Bytes of a refused body read and discarded before the connection is cut. */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
/** How long a refused body is drained before the connection is cut. */
export const DRAIN_MAX_MS = 3000;

/** Sockets already draining a refused body. */
const draining = new WeakSet<Socket>();

/**
 * Discards the rest of `req`'s body (bounded) and closes its connection once the response is out
 * and the body is in. Call it when refusing a body unread; the response should say `Connection: close`.
 */
export function drainRefusedBody(req: IncomingMessage, bounds = { maxBytes: DRAIN_MAX_BYTES, maxMs: DRAIN_MAX_MS }): void {
  const socket = req.socket;
  if (!(socket instanceof Socket) || draining.has(socket) || socket.destroyed) {
    req.resume();
    return;
  }
  draining.add(socket);
  let bodyDone = req.complete;
  let responseDone = false;
  let discarded = 0;
  const closeWhenDone = () => {
    if (bodyDone && responseDone) Socket.prototype.destroySoon.call(socket);
  };
  const timer = setTimeout(() => socket.destroy(), bounds.maxMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > bounds.maxBytes) socket.destroy();
  });
  req.once('end', () => {
    bodyDone = true;
    closeWhenDone();
  });
  // Node calls `destroySoon` once a `Connection: close` response is flushed: half-close instead,
  // and destroy when the body is in (or the client closes: the socket ends itself, or the bounds).
  socket.destroySoon = () => {
    responseDone = true;
    if (socket.writable) socket.end();
    closeWhenDone();
  };
  req.resume();
}
