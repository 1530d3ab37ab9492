/**
 * The chat stream relay run on recorded bytes, as the upstream might have cut them: the bytes are
 * pushed in pieces split at `cuts` (sorted offsets; repeats and 0 are ignored), then the stream
 * ends. What the relay wrote is returned as text. Shared by the relay's and the shaped surfaces'
 * stream tests.
 */
import type { Route } from '../../gateway/registry';
import { ChatStreamRelay, type StreamShape } from '../../gateway/surfaces/chat-stream';

/** A route with the default processor: what the relay reads of a route. */
export const RELAY_ROUTE = { processor: 'default', nullCacheDetailsMeansMiss: false } as unknown as Route;

export interface WriteRecorder {
  res: { write(chunk: string | Buffer): boolean; writableNeedDrain: boolean; destroyed: boolean };
  text(): string;
  readonly writes: number;
}

/** A response stand-in that records what the relay writes (the relay only calls `write`). */
export function writeRecorder(): WriteRecorder {
  const out: Buffer[] = [];
  let writes = 0;
  return {
    res: {
      writableNeedDrain: false,
      destroyed: false,
      write(chunk: string | Buffer): boolean {
        writes += 1;
        out.push(Buffer.from(chunk));
        return true;
      },
    },
    text: () => Buffer.concat(out).toString('utf8'),
    get writes() {
      return writes;
    },
  };
}

export function relayAtCuts(shape: StreamShape | undefined, bytes: Buffer, cuts: readonly number[] = [], options: { passThrough?: boolean } = {}): { text: string; relay: ChatStreamRelay } {
  const rec = writeRecorder();
  const relay = new ChatStreamRelay(rec.res, RELAY_ROUTE, shape, options);
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut > start) relay.push(bytes.subarray(start, cut));
    start = Math.max(start, cut);
  }
  relay.end();
  return { text: rec.text(), relay };
}
