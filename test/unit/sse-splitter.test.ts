import assert from 'node:assert/strict';
import { SseSplitter } from '../../gateway/sse/sse-splitter';

const STREAM = [
  ': keep-alive comment\n\n',
  'data: {"choices":[{"delta":{"content":"héllo 🙂"}}]}\n\n',
  'event: ignored\r\ndata: {"a":1}\r\n\r\n',
  'data: line one\ndata: line two\n\n',
  'data:no-space\n\n',
  'data: [DONE]\n\n',
].join('');
const EXPECTED = ['{"choices":[{"delta":{"content":"héllo 🙂"}}]}', '{"a":1}', 'line one\nline two', 'no-space', '[DONE]'];

function run(parts: Buffer[]): string[] {
  const splitter = new SseSplitter();
  const out: string[] = [];
  for (const part of parts) out.push(...splitter.push(part));
  out.push(...splitter.end());
  return out;
}

describe('SSE splitter', () => {
  const bytes = Buffer.from(STREAM, 'utf8');

  it('parses a whole stream', () => {
    assert.deepEqual(run([bytes]), EXPECTED);
  });

  it('gives the same events when split into two at every byte boundary (inside CRLF and multi-byte characters too)', () => {
    for (let i = 0; i <= bytes.length; i += 1) {
      assert.deepEqual(run([bytes.subarray(0, i), bytes.subarray(i)]), EXPECTED, `split at ${i}`);
    }
  });

  it('gives the same events fed one byte at a time', () => {
    assert.deepEqual(run([...bytes].map((b) => Buffer.from([b]))), EXPECTED);
  });

  it('emits a last event that lacks the trailing blank line at end', () => {
    assert.deepEqual(run([Buffer.from('data: {"x":1}\n\ndata: tail')]), ['{"x":1}', 'tail']);
  });
});
