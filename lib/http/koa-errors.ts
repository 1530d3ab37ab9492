/**
 * The `error` listener of the Koa apps. Koa reports errors it could not render (the response had
 * started): most are a client that went away mid-response (reset, broken pipe, premature close),
 * which is the client's choice, not a fault: those are one debug line without a stack. Routes that
 * care about an abandoned response (a download) log it themselves. Anything else is a warning
 * with its stack.
 */
import type { Logger } from '../logger';

const CLIENT_GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

/** Whether `err` only says the client closed the connection after the response had started. */
export function isClientGone(err: unknown): boolean {
  const e = err as { code?: unknown; headerSent?: unknown } | null;
  return e?.headerSent === true && typeof e.code === 'string' && CLIENT_GONE.has(e.code);
}

/** The listener for `app.on('error', …)`. */
export function koaErrorListener(log: Logger): (err: unknown) => void {
  return (err) => {
    if (isClientGone(err)) log.debug({ code: (err as { code: string }).code }, 'client closed the connection during the response');
    else log.warn({ err }, 'unhandled koa error');
  };
}
