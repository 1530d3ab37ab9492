/**
 * Chat-completions SSE streams (recorded shapes: text with usage, reasoning then text, parallel tool
 * calls with split arguments, a length stop, multibyte text) translated to messages events by the
 * real relay with the messages shape, the upstream bytes cut at every byte boundary and one byte at
 * a time: the output is the same as for the whole stream, and it is the documented event sequence.
 */
import assert from 'node:assert/strict';
import { relayAtCuts } from '../../support/stream-relay';
import type { FrameBytes } from '../../../gateway/surfaces/chat-stream';
import { MessagesStream, plainContentBytes, plainContentLiteral } from '../../../gateway/translate/messages-surface/stream';


const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish, ...extra }] })}\n\n`;
const usage = (prompt: number, completion: number, cached?: number): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } }) } })}\n\n`;

const STREAMS: Record<string, string> = {
  text: chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo' }) + chunk({}, 'stop') + usage(10, 2, 4) + 'data: [DONE]\n\n',
  reasoning: chunk({ role: 'assistant', reasoning_content: 'think ' }) + chunk({ reasoning_content: 'hard' }) + chunk({ content: 'answer' }) + chunk({}, 'stop', { stop_reason: 'END' }) + usage(5, 9) + 'data: [DONE]\n\n',
  tools: chunk({ role: 'assistant', content: 'Let me look.' })
    + chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] })
    + chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'ls', arguments: '{}' } }] })
    + chunk({}, 'tool_calls') + usage(30, 12) + 'data: [DONE]\n\n',
  'split tool names': chunk({ tool_calls: [{ index: 0, id: 'call_s', type: 'function', function: { name: 'read_', arguments: '' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { name: 'file' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { arguments: '{"p":1}' } }] })
    + chunk({ tool_calls: [{ index: 1, id: 'call_t', type: 'function', function: { name: 'gr' } }] })
    + chunk({ tool_calls: [{ index: 1, function: { name: 'ep' } }] })
    + chunk({ content: 'after' })
    + chunk({ tool_calls: [{ index: 2, id: 'call_u', type: 'function', function: { name: 'l' } }] })
    + chunk({ tool_calls: [{ index: 2, function: { name: 's' } }] })
    + chunk({}, 'tool_calls') + 'data: [DONE]\n\n',
  'length, multibyte, CRLF': (chunk({ content: 'héllo 🌍 ' }) + chunk({ content: '日本語' }) + chunk({}, 'length')).replaceAll('\n', '\r\n') + usage(3, 4),
};

interface Event { event: string; data: Record<string, unknown> }

function translate(bytes: Buffer, cuts: number[], stopSequences?: string[]): string {
  return relayAtCuts(new MessagesStream({ model: 'client-model', stopSequences }), bytes, cuts).text;
}

function events(text: string): Event[] {
  return text.split('\n\n').filter(Boolean).map((frame) => {
    const [eventLine, dataLine] = frame.split('\n');
    assert.match(eventLine!, /^event: /);
    const data = JSON.parse(dataLine!.slice('data: '.length)) as Record<string, unknown>;
    const event = eventLine!.slice('event: '.length);
    assert.equal(data.type, event);
    return { event, data };
  });
}

/** The message a client assembles from the events (as the SDK's accumulator does). */
function assemble(list: Event[]): { content: Array<Record<string, unknown>>; delta: Record<string, unknown>; usage: unknown } {
  const content: Array<Record<string, unknown>> = [];
  let final: Event | undefined;
  for (const { event, data } of list) {
    if (event === 'content_block_start') content[data.index as number] = { ...(data.content_block as object) };
    if (event === 'content_block_delta') {
      const block = content[data.index as number]!;
      const delta = data.delta as Record<string, string>;
      if (delta.type === 'text_delta') block.text = `${block.text as string}${delta.text}`;
      if (delta.type === 'thinking_delta') block.thinking = `${block.thinking as string}${delta.thinking}`;
      if (delta.type === 'input_json_delta') block.json = `${(block.json as string | undefined) ?? ''}${delta.partial_json}`;
    }
    if (event === 'message_delta') final = { event, data };
  }
  return { content, delta: final!.data.delta as Record<string, unknown>, usage: final!.data.usage };
}

describe('messages surface: chat stream → messages events', () => {
  for (const [name, text] of Object.entries(STREAMS)) {
    it(`${name}: the same events at every byte cut and one byte at a time`, () => {
      const bytes = Buffer.from(text, 'utf8');
      const whole = translate(bytes, [], ['END']);
      for (let i = 1; i < bytes.length; i += 1) assert.equal(translate(bytes, [i], ['END']), whole, `cut at byte ${i}`);
      assert.equal(translate(bytes, Array.from({ length: bytes.length }, (_, i) => i), ['END']), whole);
      const list = events(whole);
      assert.deepEqual(list.slice(0, 2).map((e) => e.event), ['message_start', 'ping']);
      assert.deepEqual(list.slice(-2).map((e) => e.event), ['message_delta', 'message_stop']);
      const starts = list.filter((e) => e.event === 'content_block_start').length;
      assert.equal(list.filter((e) => e.event === 'content_block_stop').length, starts);
    });
  }

  it('text: one text block; usage counts cached tokens apart', () => {
    const got = assemble(events(translate(Buffer.from(STREAMS.text!), [])));
    assert.deepEqual(got.content, [{ type: 'text', text: 'Hello' }]);
    assert.deepEqual(got.delta, { stop_reason: 'end_turn', stop_sequence: null });
    assert.deepEqual(got.usage, { input_tokens: 6, output_tokens: 2, cache_read_input_tokens: 4, cache_creation_input_tokens: 0 });
    const start = events(translate(Buffer.from(STREAMS.text!), []))[0]!.data.message as Record<string, unknown>;
    assert.equal(start.id, 'msg_chatcmpl-1');
    assert.equal(start.model, 'client-model');
  });

  it('reasoning: a thinking block before the text block; a matched stop sequence is reported', () => {
    const got = assemble(events(translate(Buffer.from(STREAMS.reasoning!), [], ['END'])));
    assert.deepEqual(got.content, [{ type: 'thinking', thinking: 'think hard', signature: '' }, { type: 'text', text: 'answer' }]);
    assert.deepEqual(got.delta, { stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it('tools: text, then one tool_use block per call with its arguments as input_json_delta', () => {
    const got = assemble(events(translate(Buffer.from(STREAMS.tools!), [])));
    assert.deepEqual(got.content, [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_a', name: 'read', input: {}, json: '{"path":"a.txt"}' },
      { type: 'tool_use', id: 'call_b', name: 'ls', input: {}, json: '{}' },
    ]);
    assert.equal(got.delta.stop_reason, 'tool_use');
  });

  it('split tool names: a name sent in pieces arrives whole, before its arguments, text, or the end', () => {
    const list = events(translate(Buffer.from(STREAMS['split tool names']!), []));
    const got = assemble(list);
    assert.deepEqual(got.content, [
      { type: 'tool_use', id: 'call_s', name: 'read_file', input: {}, json: '{"p":1}' },
      { type: 'tool_use', id: 'call_t', name: 'grep', input: {} },
      { type: 'text', text: 'after' },
      { type: 'tool_use', id: 'call_u', name: 'ls', input: {} },
    ]);
    assert.equal(got.delta.stop_reason, 'tool_use');
    assert.deepEqual(list.filter((e) => e.event.startsWith('content_block_')).map((e) => `${e.event}:${e.data.index as number}`), [
      'content_block_start:0', 'content_block_delta:0', 'content_block_stop:0', 'content_block_start:1', 'content_block_stop:1',
      'content_block_start:2', 'content_block_delta:2', 'content_block_stop:2', 'content_block_start:3', 'content_block_stop:3',
    ]);
  });

  it('length: max_tokens; multibyte text intact through CRLF framing and a stream without [DONE]', () => {
    const got = assemble(events(translate(Buffer.from(STREAMS['length, multibyte, CRLF']!), [])));
    assert.deepEqual(got.content, [{ type: 'text', text: 'héllo 🌍 日本語' }]);
    assert.equal(got.delta.stop_reason, 'max_tokens');
  });

  it('an empty stream still opens and closes the message', () => {
    const list = events(translate(Buffer.from('data: [DONE]\n\n'), []));
    assert.deepEqual(list.map((e) => e.event), ['message_start', 'ping', 'message_delta', 'message_stop']);
  });

  it('the unparsed fast paths of text deltas (text and bytes) write exactly what the parsed path writes', () => {
    class ParsedOnly extends MessagesStream {
      override plain(): undefined {
        return undefined;
      }
    }
    Object.defineProperty(ParsedOnly.prototype, 'plainBytes', { value: undefined });
    // Pushed whole (one read), one event per read (both take the byte path for whole events), and
    // one byte at a time (the parser's text path).
    // Also cut in two at every byte: a read that ends inside an event, the rest in the next one.
    type Mode = 'whole' | 'per event' | 'byte by byte' | `cut at ${number}`;
    const cutsOf = (bytes: Buffer, mode: Mode): number[] => {
      if (mode === 'per event') return [...bytes.toString('latin1').matchAll(/\n\n/g)].map((m) => m.index + 2);
      if (mode === 'byte by byte') return Array.from({ length: bytes.length }, (_, i) => i);
      return mode.startsWith('cut at ') ? [Number(mode.slice(7))] : [];
    };
    const run = (shape: MessagesStream, bytes: Buffer, mode: Mode): string => relayAtCuts(shape, bytes, cutsOf(bytes, mode)).text;
    const escaped = chunk({ role: 'assistant', content: 'a' }) + chunk({ content: 'quote " backslash \\ newline \n tab \t \u0001 é 🌍' })
      + chunk({ content: '</s>' }) + chunk({ content: 'x' }, null, { logprobs: null }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
    for (const [name, stream] of Object.entries({ ...STREAMS, escaped })) {
      const bytes = Buffer.from(stream);
      const cuts = Array.from({ length: bytes.length - 1 }, (_, i) => `cut at ${i + 1}` as const);
      for (const mode of ['whole', 'per event', 'byte by byte', ...cuts] as Mode[]) {
        const fast = new MessagesStream({ model: 'client-model', stopSequences: undefined });
        const hits = { text: 0, bytes: 0 };
        const counted = Object.assign(fast, {
          plain: (data: string) => {
            const frames = MessagesStream.prototype.plain.call(fast, data);
            if (frames !== undefined) hits.text += 1;
            return frames;
          },
          plainBytes: (chunkBytes: Buffer, start: number, end: number, out: FrameBytes) => {
            const taken = MessagesStream.prototype.plainBytes.call(fast, chunkBytes, start, end, out);
            if (taken) hits.bytes += 1;
            return taken;
          },
        });
        assert.equal(run(counted, bytes, mode), run(new ParsedOnly({ model: 'client-model', stopSequences: undefined }), bytes, mode), `${name}, ${mode}`);
        if (name === 'text' || name === 'escaped') assert.ok((mode === 'byte by byte' ? hits.text : mode.startsWith('cut') ? hits.text + hits.bytes : hits.bytes) >= 1, `${name}, ${mode}: the fast path was taken`);
      }
    }
  });

  it('takes the fast path only for a lone index-0 choice whose delta is exactly a non-empty content', () => {
    const data = (choices: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...extra });
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: 'tok' }, finish_reason: null, logprobs: null }])), '"tok"');
    const tricky = 'a "quoted" \\ back\nslash';
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: tricky }, finish_reason: null }])), JSON.stringify(tricky));
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: '' }, finish_reason: null }])), undefined, 'empty content');
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: 'x', role: 'assistant' } }])), undefined, 'another delta field');
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }])), undefined, 'a finish reason');
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: 'x' } }, { index: 1, delta: { content: 'y' } }])), undefined, 'a second choice');
    assert.equal(plainContentLiteral(data([{ index: 1, delta: { content: 'y' } }])), undefined, 'not choice 0');
    assert.equal(plainContentLiteral(data([{ index: 0, delta: { content: 'x' }, finish_reason: null, tool_calls: [] }])), undefined, 'tool calls');
    assert.equal(plainContentLiteral('{"choices":[{"index":0,"delta":{"content":"unterminated'), undefined);
  });

  it('the byte scan agrees with the text scan, within the event range only', () => {
    const data = (choices: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...extra });
    const samples = [
      data([{ index: 0, delta: { content: 'tok' }, finish_reason: null, logprobs: null }]),
      data([{ index: 0, delta: { content: 'a "quoted" \\ back\nslash é 🌍' }, finish_reason: null }]),
      data([{ index: 0, delta: { content: '' }, finish_reason: null }]),
      data([{ index: 0, delta: { content: 'x', role: 'assistant' } }]),
      data([{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }]),
      data([{ index: 0, delta: { content: 'x' } }, { index: 1, delta: { content: 'y' } }]),
      data([{ index: 1, delta: { content: 'y' } }]),
      data([{ index: 0, delta: { content: 'x' }, finish_reason: null, tool_calls: [] }]),
      data([{ index: 0, delta: { content: 'x' }, finish_reason: null }], { reasoning: 'r' }),
      '{"choices":[{"index":0,"delta":{"content":"unterminated',
    ];
    for (const sample of samples) {
      const text = plainContentLiteral(sample);
      // Framed in other bytes: the scan never reads outside [start, end).
      const framed = Buffer.from(`data: ${sample}\n\ndata: {"choices":[{"index":0,"delta":{"content":"next"}}]}\n\n`);
      const start = 6;
      const end = start + Buffer.byteLength(sample);
      const range = plainContentBytes(framed, start, end);
      assert.equal(range === undefined ? undefined : framed.subarray(range[0], range[1]).toString('utf8'), text, sample);
    }
  });
});
