/**
 * The SSE wire format, parsed incrementally (no DOM, no I/O): `event:`, `data:` (joined by
 * newlines), `id:`, comment lines ignored, an event ends at a blank line; CR, LF and CRLF line ends.
 */

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
      // A CR at the end of what arrived may be the first half of a CRLF: wait for the next chunk.
      if (newline === buffer.length - 1 && buffer.endsWith('\r')) break;
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
