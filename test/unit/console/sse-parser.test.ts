/** The console's SSE parser: every event of a stream, however the bytes are split. */
import assert from 'node:assert/strict';
import { sseParser, type SseEvent } from '../../../console/src/sse-parser';

const STREAM = ': keep-alive\r\nid: 7\r\nevent: tool_use\r\ndata: {"a":1}\r\n\r\nid: 8\ndata: line one\ndata: line two\n\nevent: end\rdata:\r\r: trailing comment\n';
const EXPECTED: SseEvent[] = [
  { event: 'tool_use', data: '{"a":1}', id: '7' },
  { event: 'message', data: 'line one\nline two', id: '8' },
  { event: 'end', data: '', id: '8' },
];

function parse(chunks: string[]): SseEvent[] {
  const events: SseEvent[] = [];
  const feed = sseParser((e) => events.push(e));
  for (const chunk of chunks) feed(chunk);
  return events;
}

describe('console SSE parser', () => {
  it('parses CRLF, LF and CR line ends, multi-line data, ids that persist, comments', () => {
    assert.deepEqual(parse([STREAM]), EXPECTED, 'a lone `data:` is one empty data line: the event is dispatched with data ""');
    assert.deepEqual(parse(['event: x\n\n']), [], 'an event without data lines is not dispatched');
  });

  it('gives the same events for a split at every position (two chunks) and byte by byte', () => {
    const whole = parse([STREAM]);
    for (let i = 0; i <= STREAM.length; i++) assert.deepEqual(parse([STREAM.slice(0, i), STREAM.slice(i)]), whole, `split at ${i}`);
    assert.deepEqual(parse([...STREAM]), whole);
  });
});
