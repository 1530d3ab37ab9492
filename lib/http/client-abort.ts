/**
 * Cancellation when the client goes away. An EventEmitter with `aborted`/`reason`, which undici
 * accepts as a request `signal`; cheaper per request than an AbortController (an EventTarget).
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';

export class ClientAbort extends EventEmitter {
  aborted = false;
  reason: Error | undefined;

  abort(reason: Error = new Error('client closed the connection')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** A {@link ClientAbort} fired when `res` closes before it finished. */
export function abortOnClientClose(res: ServerResponse): ClientAbort {
  const abort = new ClientAbort();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return abort;
}

/** Waits until `res` drains or closes (never hangs on a client that went away). */
export function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
