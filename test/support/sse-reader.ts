/**
 * Reads a server-sent-events response body as it arrives (for tests of streams that stay open):
 * frames with their `id`, `event`, `data` fields, comments, and whether the stream ended.
 */
import assert from 'node:assert/strict';
import { waitFor } from './wait';

export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comments: string[];
}

export class SseReader {
  readonly frames: SseFrame[] = [];
  ended = false;
  private buffer = '';
  private readonly done: Promise<void>;

  constructor(response: Response) {
    assert.ok(response.body, 'the response has a body');
    this.done = this.pump(response.body);
  }

  /** Frames that carry an event (a `data` field). */
  get events(): SseFrame[] {
    return this.frames.filter((f) => f.data !== undefined);
  }

  /** Waits until at least `count` event frames arrived. */
  async waitForEvents(count: number, what = `${count} events`): Promise<SseFrame[]> {
    await waitFor(() => this.events.length >= count || this.ended, what);
    assert.ok(this.events.length >= count, `${what}: the stream ended after ${this.events.length} events`);
    return this.events;
  }

  /** Waits until the server ends the stream. */
  async waitForEnd(): Promise<void> {
    await waitFor(() => this.ended, 'the stream to end');
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buffer += decoder.decode(chunk, { stream: true });
        this.split();
      }
    } catch {
      // aborted by the test
    } finally {
      this.ended = true;
    }
  }

  private split(): void {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end === -1) return;
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const frame: SseFrame = { comments: [] };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          frame.comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id' || field === 'event') frame[field] = value;
        if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      }
      this.frames.push(frame);
    }
  }

  /** Resolves when reading stopped (after the server ended or the client aborted). */
  closed(): Promise<void> {
    return this.done;
  }
}
