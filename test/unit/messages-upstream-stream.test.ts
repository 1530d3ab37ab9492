/**
 * The messages-API → chat-chunk stream translation on recorded messages-API streams, fed whole,
 * split at every byte boundary and byte by byte; and the stream stage that opens on the first chat
 * chunk, rejects (fallback still possible) on an early `error` event and fails mid-stream after.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessagesStreamTranslator } from '../../gateway/translate/messages-upstream/stream';
import { openTranslatedStream } from '../../gateway/upstream/messages-stream';
import type { StreamSink, UpstreamStream } from '../../gateway/upstream/exchange';
import { UpstreamError } from '../../gateway/upstream/upstream-error';
import { SseSplitter } from '../../gateway/sse/sse-splitter';

const fixture = (name: string): Buffer => readFileSync(join(__dirname, '../fixtures/messages-upstream', name));
const TOOLS = fixture('stream-tools.sse');
const FAILING = fixture('stream-error.sse');

interface Chunk {
  id: string;
  object: string;
  model: string;
  choices: Array<{ delta: { role?: string; content?: string; reasoning_content?: string; tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }> }; finish_reason: string | null }>;
  usage?: Record<string, unknown>;
}

/** Feeds `pieces` and returns the chat SSE text and the translator's error. */
function translate(pieces: Buffer[]): { text: string; error: unknown } {
  const t = new MessagesStreamTranslator();
  let text = '';
  for (const piece of pieces) text += t.push(piece);
  text += t.end();
  return { text, error: t.error };
}

/** The chat events of SSE text: chunks and whether `[DONE]` closed it. */
function chunksOf(text: string): { chunks: Chunk[]; done: boolean } {
  const splitter = new SseSplitter();
  const events = [...splitter.push(Buffer.from(text)), ...splitter.end()];
  const done = events.at(-1) === '[DONE]';
  return { chunks: events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e) as Chunk), done };
}

/** What a chat client assembles from the chunks. */
function assemble(chunks: Chunk[]): { role?: string; content: string; reasoning: string; calls: Array<{ id?: string; name?: string; arguments: string }>; finish: string | null; usage: unknown } {
  const out = { role: undefined as string | undefined, content: '', reasoning: '', calls: [] as Array<{ id?: string; name?: string; arguments: string }>, finish: null as string | null, usage: undefined as unknown };
  for (const chunk of chunks) {
    if (chunk.usage) out.usage = chunk.usage;
    for (const choice of chunk.choices) {
      out.role ??= choice.delta.role;
      out.content += choice.delta.content ?? '';
      out.reasoning += choice.delta.reasoning_content ?? '';
      for (const call of choice.delta.tool_calls ?? []) {
        const slot = (out.calls[call.index] ??= { arguments: '' });
        if (call.id) slot.id = call.id;
        if (call.function.name) slot.name = call.function.name;
        slot.arguments += call.function.arguments ?? '';
      }
      if (choice.finish_reason) out.finish = choice.finish_reason;
    }
  }
  return out;
}

/** A chunk's `created` is the second its stream began: runs a second apart differ only there. */
const stable = (text: string): string => text.replace(/"created":\d+/g, '"created":0');

describe('messages-upstream stream translator', () => {
  const whole = translate([TOOLS]);

  it('turns a recorded tool-use stream into chat chunks, usage and [DONE]', () => {
    assert.equal(whole.error, undefined);
    const { chunks, done } = chunksOf(whole.text);
    assert.equal(done, true);
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'msg_01XFDUDYJgAACzvnptvVoYEL' && c.model === 'claude-sonnet-4-5-20250929'));
    const got = assemble(chunks);
    assert.equal(got.role, 'assistant');
    assert.equal(got.content, 'Okay, let me check the weather in San Francisco, CA — un instant ☀️');
    assert.equal(got.reasoning, 'The user wants the weather.');
    assert.deepEqual(got.calls, [
      { id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"location": "San Francisco, CA", "unit": "celsius"}' },
      { id: 'toolu_02', name: 'get_time', arguments: '{"tz": "PST"}' },
    ]);
    assert.equal(got.finish, 'tool_calls');
    assert.deepEqual(got.usage, {
      prompt_tokens: 472 + 2048 + 100, completion_tokens: 89, total_tokens: 472 + 2048 + 100 + 89,
      prompt_tokens_details: { cached_tokens: 2048 }, cache_read_input_tokens: 2048, cache_creation_input_tokens: 100,
    });
    const usageChunk = chunks.at(-1)!;
    assert.deepEqual(usageChunk.choices, []);
    const finishChunk = chunks.at(-2)!;
    assert.equal(finishChunk.choices[0]?.finish_reason, 'tool_calls');
  });

  it('gives the same output for the stream split at every byte boundary, and byte by byte', () => {
    for (let i = 1; i < TOOLS.length; i += 1) {
      const split = translate([TOOLS.subarray(0, i), TOOLS.subarray(i)]);
      assert.equal(stable(split.text), stable(whole.text), `split at byte ${i}`);
      assert.equal(split.error, undefined);
    }
    const bytes = translate([...TOOLS].map((b) => Buffer.from([b])));
    assert.equal(stable(bytes.text), stable(whole.text));
  });

  it('emits output as soon as an event completes, never holding a finished one', () => {
    const t = new MessagesStreamTranslator();
    const firstEventEnd = TOOLS.indexOf('\n\n') + 2;
    assert.equal(t.push(TOOLS.subarray(0, firstEventEnd - 1)), '');
    const role = chunksOf(t.push(TOOLS.subarray(firstEventEnd - 1, firstEventEnd))).chunks;
    assert.equal(role.length, 1);
    assert.deepEqual(role[0]?.choices[0]?.delta, { role: 'assistant', content: '' });
  });

  it('stops at an error event, at every split, keeping what came before it', () => {
    for (let i = 1; i < FAILING.length; i += 1) {
      const { text, error } = translate([FAILING.subarray(0, i), FAILING.subarray(i)]);
      assert.deepEqual(error, { type: 'overloaded_error', message: 'Overloaded' }, `split at ${i}`);
      const { chunks, done } = chunksOf(text);
      assert.equal(done, false);
      assert.equal(assemble(chunks).content, 'Hello');
    }
  });

  it('reports a stream that ends before message_stop', () => {
    const cut = TOOLS.subarray(0, TOOLS.indexOf('event: message_delta'));
    const { text, error } = translate([cut]);
    assert.deepEqual(error, { type: 'api_error', message: 'the upstream stream ended before message_stop' });
    assert.equal(chunksOf(text).done, false);
  });
});

/** An open upstream stream fed by the test: the first chunk, then `send`/`finish`/`fail`. */
class FakeInner implements UpstreamStream {
  sink: StreamSink | undefined;
  destroyed = 0;
  resumed = 0;
  constructor(readonly first: Buffer) {}
  pipe(sink: StreamSink): void {
    this.sink = sink;
  }
  resume(): void {
    this.resumed += 1;
  }
  destroy(): void {
    this.destroyed += 1;
  }
}

function recordingSink(): StreamSink & { text: string; ended: boolean; errors: Error[] } {
  const sink = { text: '', ended: false, errors: [] as Error[], data: (c: Buffer) => ((sink.text += c.toString()), true), end: () => void (sink.ended = true), error: (e: Error) => void sink.errors.push(e) };
  return sink;
}

describe('messages-upstream stream stage', () => {
  const classify = (err: unknown): unknown => new UpstreamError(`classified: ${(err as Error).message}`, 'stream', 502, true);

  it('opens on the first chat chunk even when the first upstream bytes complete no event', async () => {
    const inner = new FakeInner(TOOLS.subarray(0, 10));
    const opening = openTranslatedStream(inner, classify);
    inner.sink!.data(TOOLS.subarray(10, 400));
    const stream = await opening;
    assert.match(stream.first.toString(), /"role":"assistant"/);
    const sink = recordingSink();
    stream.pipe(sink);
    assert.equal(inner.resumed, 1, 'the upstream resumes once the relay pipes');
    inner.sink!.data(TOOLS.subarray(400));
    inner.sink!.end();
    assert.equal(sink.ended, true);
    assert.equal(assemble(chunksOf(stream.first.toString() + sink.text).chunks).finish, 'tool_calls');
  });

  it('rejects with a retryable 529-classified error when the stream starts with an error event', async () => {
    const inner = new FakeInner(Buffer.from('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'));
    await assert.rejects(openTranslatedStream(inner, classify), (err: unknown) => {
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.retryable, true);
      assert.equal(err.options.upstreamStatus, 529);
      assert.match(err.message, /Overloaded/);
      return true;
    });
    assert.equal(inner.destroyed, 1);
  });

  it('rejects through classify when the upstream fails before the first chat chunk', async () => {
    const inner = new FakeInner(Buffer.from('event: ping\n'));
    const opening = openTranslatedStream(inner, classify);
    inner.sink!.error(new Error('socket reset'));
    await assert.rejects(opening, /classified: socket reset/);
  });

  it('fails mid-stream on an error event after the first chunk and closes the upstream', async () => {
    const inner = new FakeInner(FAILING.subarray(0, FAILING.indexOf('event: error')));
    const stream = await openTranslatedStream(inner, classify);
    const sink = recordingSink();
    stream.pipe(sink);
    inner.sink!.data(FAILING.subarray(FAILING.indexOf('event: error')));
    assert.equal(sink.errors.length, 1);
    assert.equal(sink.errors[0]?.message, 'overloaded_error: Overloaded');
    assert.equal(sink.ended, false);
    assert.equal(inner.destroyed, 1);
    inner.sink!.error(new Error('aborted'));
    assert.equal(sink.errors.length, 1, 'the abort that follows is not reported twice');
    assert.equal(assemble(chunksOf(stream.first.toString() + sink.text).chunks).content, 'Hello');
  });
});
