/**
 * Server-sent events over `fetch` (EventSource cannot send the Authorization header): reads the
 * stream as it arrives and hands each complete event to `onEvent`. Resumes after a dropped
 * connection from the last event id (`Last-Event-ID`), waiting `retryMs` between attempts, until
 * `signal` aborts. Events are parsed by the SSE rules: `event:`, `data:` (joined by newlines),
 * `id:`, comments ignored, an event ends at a blank line.
 */
import { accessToken } from './client';

/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** Parses a chunked SSE text stream; feed it text, it calls `emit` for each complete event. */
export function sseParser(emit: (event: SseEvent) => void): (text: string) => void {
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  let id: string | undefined;
  return (text: string) => {
    buffer += text;
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length) emit({ event, data: data.join('\n'), id });
        event = 'message';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}

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
