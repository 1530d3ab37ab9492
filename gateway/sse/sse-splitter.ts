/**
 * Incremental server-sent-events parser: bytes in (split anywhere, even inside a multi-byte
 * character or a CRLF), complete events' `data` out. Comment lines and fields other than
 * `data` are ignored; several `data:` lines of one event are joined with `\n`.
 */
import { StringDecoder } from 'node:string_decoder';

export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private data: string[] = [];

  /** Feeds bytes; returns the data of every event completed by them. */
  push(chunk: Buffer): string[] {
    this.buffer += this.decoder.write(chunk);
    return this.drain(false);
  }

  /** Ends the input; returns a last event that was not followed by a blank line. */
  end(): string[] {
    this.buffer += this.decoder.end();
    return this.drain(true);
  }

  private drain(final: boolean): string[] {
    const events: string[] = [];
    let start = 0;
    for (;;) {
      const newline = this.buffer.indexOf('\n', start);
      if (newline === -1) break;
      // A CR right before the LF belongs to the line ending.
      const lineEnd = newline > start && this.buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      this.line(this.buffer.slice(start, lineEnd), events);
      start = newline + 1;
    }
    this.buffer = start === 0 ? this.buffer : this.buffer.slice(start);
    if (final) {
      if (this.buffer.length > 0) this.line(this.buffer.endsWith('\r') ? this.buffer.slice(0, -1) : this.buffer, events);
      this.buffer = '';
      this.line('', events);
    }
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line.length === 0) {
      if (this.data.length > 0) {
        events.push(this.data.length === 1 ? this.data[0]! : this.data.join('\n'));
        this.data = [];
      }
      return;
    }
    if (line.startsWith('data:')) this.data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
  }
}

/** One SSE event carrying `data` (already JSON-serialized or `[DONE]`). */
export function sseEvent(data: string): string {
  return `data: ${data}\n\n`;
}
