/**
 * Server-sent events over `fetch` (EventSource cannot send the Authorization header): reads the
 * stream as it arrives and hands each complete event to `onEvent`. Resumes after a dropped
 * connection from the last event id (`Last-Event-ID`), waiting `retryMs` between attempts, until
 * `signal` aborts. Events are parsed by the SSE rules: `event:`, `data:` (joined by newlines),
 * `id:`, comments ignored, an event ends at a blank line.
 */
import { accessToken } from './client';
import { sseParser, type SseEvent } from './sse-parser';

export { sseParser, type SseEvent } from './sse-parser';

/** Options of `streamEvents`. */
export interface StreamOptions {
  signal: AbortSignal;
  onEvent: (event: SseEvent) => void;
  /** Called with the state of the connection (for an honest "live / reconnecting" label). */
  onState?: (state: 'connecting' | 'live' | 'reconnecting' | 'ended', detail?: string) => void;
  retryMs?: number;
  /** The stream ends for good on this status (e.g. 404: the chat is gone). */
  fatal?: (status: number) => boolean;
}

/** Follows an SSE endpoint of this origin until `signal` aborts or the server ends the stream for good. */
export async function streamEvents(path: string, options: StreamOptions): Promise<void> {
  let lastId: string | undefined;
  const retryMs = options.retryMs ?? 2000;
  while (!options.signal.aborted) {
    options.onState?.(lastId === undefined ? 'connecting' : 'reconnecting');
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      const token = accessToken();
      if (token) headers.authorization = `Bearer ${token}`;
      if (lastId !== undefined) headers['last-event-id'] = lastId;
      const res = await fetch(path, { headers, signal: options.signal });
      if (!res.ok || !res.body) {
        if (options.fatal?.(res.status) ?? (res.status >= 400 && res.status < 500)) {
          options.onState?.('ended', `${res.status}`);
          return;
        }
        throw new Error(`status ${res.status}`);
      }
      options.onState?.('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const feed = sseParser((event) => {
        if (event.id !== undefined) lastId = event.id;
        options.onEvent(event);
      });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feed(value);
      }
    } catch (err) {
      if (options.signal.aborted) return;
      options.onState?.('reconnecting', (err as Error).message);
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}
