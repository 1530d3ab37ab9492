import assert from 'node:assert/strict';
import {
  PROCESSOR_NAMES, createStreamProcessor, isProcessorName, processCompletion,
  type ChatCompletion, type ChatCompletionChunk, type ChatDelta, type ProcessorName, type ToolCall,
} from '../../gateway/processors';

const ID = 'chatcmpl-test1';

function completion(content: string | null, message: Partial<ChatCompletion['choices'][number]['message']> = {}): ChatCompletion {
  return {
    id: ID, object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content, ...message }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  };
}

function chunk(delta: ChatDelta, finish: string | null = null, index = 0): ChatCompletionChunk {
  return { id: ID, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index, delta, finish_reason: finish }] };
}

const usageChunk = (): ChatCompletionChunk => ({
  id: ID, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});

/** What a client ends up with, from either mode. */
interface Outcome { content: string; reasoning: string; calls: ToolCall[]; finish: string | null }

function fromWhole(name: ProcessorName, content: string): Outcome {
  const choice = processCompletion(name, completion(content)).choices[0];
  assert.ok(choice);
  const { message } = choice;
  return { content: message.content ?? '', reasoning: message.reasoning_content ?? '', calls: message.tool_calls ?? [], finish: choice.finish_reason };
}

function fromChunks(chunks: readonly ChatCompletionChunk[]): Outcome {
  const outcome: Outcome = { content: '', reasoning: '', calls: [], finish: null };
  for (const c of chunks) {
    for (const choice of c.choices) {
      outcome.content += choice.delta.content ?? '';
      outcome.reasoning += choice.delta.reasoning_content ?? '';
      for (const call of choice.delta.tool_calls ?? []) {
        outcome.calls[call.index] = { id: call.id ?? '', type: 'function', function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' } };
      }
      outcome.finish = choice.finish_reason ?? outcome.finish;
    }
  }
  return outcome;
}

/** Streams `pieces` like an engine does: role chunk, content chunks, finishing chunk, usage chunk. */
function stream(name: ProcessorName, pieces: readonly string[], finish: string | null = 'stop'): ChatCompletionChunk[] {
  const processor = createStreamProcessor(name);
  const out: ChatCompletionChunk[] = [];
  out.push(...processor.push(chunk({ role: 'assistant', content: '' })));
  for (const piece of pieces) out.push(...processor.push(chunk({ content: piece })));
  if (finish !== null) out.push(...processor.push(chunk({}, finish)));
  out.push(...processor.push(usageChunk()), ...processor.finish());
  return out;
}

/** Splits `text` into pieces of 1-6 characters, deterministically for a seed. */
function randomPieces(text: string, seed: number): string[] {
  let state = seed;
  const pieces: string[] = [];
  for (let at = 0; at < text.length;) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const size = 1 + ((state >>> 16) % 6);
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

const call = (name: string, args: Record<string, unknown>): [string, Record<string, unknown>] => [name, args];
const QWEN_CALL = '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>';
const QWEN_CODE = '<tool_call>\n<function=write>\n<parameter=code>\ndef f():\n    return 1\n</parameter>\n<parameter=opts>\n{"force": true, "tags": [1, 2]}\n</parameter>\n<parameter=big>\n12345678901234567890\n</parameter>\n<parameter=q>\n"quoted"\n</parameter>\n<parameter=none>\nnull\n</parameter>\n</function>\n</tool_call>';
const GLM_CALL = '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>';

interface Sample { name: ProcessorName; text: string; content: string; reasoning?: string; calls?: [string, Record<string, unknown>][] }

const SAMPLES: Record<string, Sample> = {
  'default keeps tags': { name: 'default', text: '<think>x</think> <tool_call>y</tool_call>', content: '<think>x</think> <tool_call>y</tool_call>' },
  'think block': { name: 'think_block', text: '\n <think>\nLet me think.\n</think>\n\nThe answer is 4.', content: 'The answer is 4.', reasoning: 'Let me think.' },
  'tag-like text inside': { name: 'think_block', text: '<think>a < b </thinking> </th ok</think>  Done <', content: 'Done <', reasoning: 'a < b </thinking> </th ok' },
  'implicit opening tag': { name: 'think_block', text: 'Reasoning, no opening tag.\n</think>\n\nFinal.', content: 'Final.', reasoning: 'Reasoning, no opening tag.' },
  'no tags': { name: 'think_block', text: '  Plain <b>html</b>, a < sign\n', content: '  Plain <b>html</b>, a < sign\n' },
  'think not at start': { name: 'think_block', text: 'Intro <think>not reasoning</think> tail', content: 'Intro <think>not reasoning</think> tail' },
  'empty think block': { name: 'think_block', text: '<think>\n\n</think>\n\nHi', content: 'Hi' },
  'later think block is content': { name: 'think_block', text: '<think>r</think>A <think>x</think>', content: 'A <think>x</think>', reasoning: 'r' },
  'unterminated think': { name: 'think_block', text: '<think>cut off </thi', content: '', reasoning: 'cut off </thi' },
  'partial opening tag only': { name: 'think_block', text: ' <thi', content: ' <thi' },
  'qwen call': { name: 'qwen_coder', text: `Let me check.\n\n${QWEN_CALL}`, content: 'Let me check.', calls: [call('get_weather', { city: 'Paris', days: 3 })] },
  'qwen values': {
    name: 'qwen_coder', text: QWEN_CODE, content: '',
    calls: [call('write', { code: 'def f():\n    return 1', opts: { force: true, tags: [1, 2] }, big: '12345678901234567890', q: '"quoted"', none: null })],
  },
  'qwen two calls and text': {
    name: 'qwen_coder', text: `A <tool_calls> are fun\n${QWEN_CALL}\n\n${QWEN_CALL.replace('Paris', 'Oslo')}\nDone.\n`,
    content: 'A <tool_calls> are fun\nDone.\n', calls: [call('get_weather', { city: 'Paris', days: 3 }), call('get_weather', { city: 'Oslo', days: 3 })],
  },
  'qwen no call': { name: 'qwen_coder', text: 'Hello\n\n', content: 'Hello\n\n' },
  'qwen malformed': { name: 'qwen_coder', text: 'x\n<tool_call>\nnot a function\n</tool_call> after', content: 'x\n<tool_call>\nnot a function\n</tool_call> after' },
  'qwen unterminated': { name: 'qwen_coder', text: 'Calling \n<tool_call>\n<function=f>\n<parameter=a>\n1', content: 'Calling \n<tool_call>\n<function=f>\n<parameter=a>\n1' },
  'qwen unclosed then valid': { name: 'qwen_coder', text: 'x <tool_call>oops <tool_call>\n<function=f>\n</function>\n</tool_call>', content: 'x <tool_call>oops', calls: [call('f', {})] },
  'glm think and call': { name: 'glm', text: `<think>Need weather.</think>\nSure.\n${GLM_CALL}`, content: 'Sure.', reasoning: 'Need weather.', calls: [call('get_weather', { city: 'Paris', days: 3 })] },
  'glm calls without think': {
    name: 'glm', text: `<tool_call>get_time\n</tool_call>\n${GLM_CALL.replace('Paris', '{"lat": 1}')}`, content: '',
    calls: [call('get_time', {}), call('get_weather', { city: { lat: 1 }, days: 3 })],
  },
  'glm implicit think': { name: 'glm', text: `plan</think>${GLM_CALL}`, content: '', reasoning: 'plan', calls: [call('get_weather', { city: 'Paris', days: 3 })] },
  'glm malformed': { name: 'glm', text: '<think>r</think>\n<tool_call>bad name\n</tool_call>', content: '<tool_call>bad name\n</tool_call>', reasoning: 'r' },
  'glm unterminated': { name: 'glm', text: 'ok <tool_call>get_weather\n<arg_key>city', content: 'ok <tool_call>get_weather\n<arg_key>city' },
};

describe('output processors', () => {
  it('lists and recognises the processor names', () => {
    assert.deepEqual(PROCESSOR_NAMES, ['default', 'think_block', 'qwen_coder', 'glm']);
    assert.equal(isProcessorName('glm'), true);
    assert.equal(isProcessorName('hermes'), false);
  });

  describe('non-streaming', () => {
    for (const [title, sample] of Object.entries(SAMPLES)) {
      it(`${sample.name}: ${title}`, () => {
        const got = fromWhole(sample.name, sample.text);
        assert.equal(got.content, sample.content);
        assert.equal(got.reasoning, sample.reasoning ?? '');
        const calls = sample.calls ?? [];
        assert.deepEqual(got.calls.map((c): [string, unknown] => [c.function.name, JSON.parse(c.function.arguments)]), calls);
        assert.deepEqual(got.calls.map((c) => [c.id, c.type]), calls.map((_, i) => [`call_chatcmpltest1_${i}`, 'function']));
        assert.equal(got.finish, calls.length > 0 ? 'tool_calls' : 'stop');
      });
    }

    it('default returns the body untouched and keeps upstream reasoning', () => {
      const body = completion('<think>x</think>y', { reasoning_content: 'r' });
      const copy = structuredClone(body);
      assert.equal(processCompletion('default', body), body);
      assert.deepEqual(body, copy);
    });

    it('appends to upstream reasoning and tool calls, and leaves null content alone', () => {
      const upstream: ToolCall = { id: 'up', type: 'function', function: { name: 'u', arguments: '{}' } };
      const body = processCompletion('glm', completion(`<think>b</think>${GLM_CALL}`, { reasoning_content: 'a', tool_calls: [upstream] }));
      const message = body.choices[0]?.message;
      assert.equal(message?.content, null);
      assert.equal(message?.reasoning_content, 'ab');
      assert.deepEqual(message?.tool_calls?.map((c) => c.id), ['up', 'call_chatcmpltest1_1']);
      assert.deepEqual(processCompletion('qwen_coder', completion(null)).choices[0]?.message, { role: 'assistant', content: null });
    });
  });

  describe('streaming', () => {
    for (const [title, sample] of Object.entries(SAMPLES)) {
      it(`${sample.name}: ${title} — every split point, one-character and random chunks match non-streaming`, () => {
        const whole = fromWhole(sample.name, sample.text);
        for (let at = 0; at <= sample.text.length; at += 1) {
          const got = fromChunks(stream(sample.name, [sample.text.slice(0, at), sample.text.slice(at)]));
          assert.deepEqual(got, whole, `split at ${at}`);
        }
        assert.deepEqual(fromChunks(stream(sample.name, [...sample.text])), whole, 'one-character chunks');
        for (let seed = 1; seed <= 20; seed += 1) {
          assert.deepEqual(fromChunks(stream(sample.name, randomPieces(sample.text, seed))), whole, `random seed ${seed}`);
        }
      });
    }

    it('default passes every chunk through without allocating', () => {
      const processor = createStreamProcessor('default');
      const first = chunk({ content: '<think>' });
      const out1 = processor.push(first);
      assert.deepEqual(out1, [first]);
      assert.equal(out1[0], first);
      const second = chunk({ reasoning_content: 'r', content: 'x' });
      const out2 = processor.push(second);
      assert.equal(out2, out1);
      assert.equal(out2[0], second);
      assert.deepEqual(processor.finish(), []);
    });

    it('passes chunks without choices (usage) and unchanged chunks through as the same object', () => {
      for (const name of PROCESSOR_NAMES) {
        const processor = createStreamProcessor(name);
        const usage = usageChunk();
        assert.equal(processor.push(usage)[0], usage, name);
        const role = chunk({ role: 'assistant', content: '' });
        assert.equal(processor.push(role)[0], role, name);
      }
      const processor = createStreamProcessor('think_block');
      processor.push(chunk({ content: '<think>r</think>A' }));
      const plain = chunk({ content: ' more text' });
      assert.equal(processor.push(plain)[0], plain);
    });

    it('forwards text at once and holds back only a possible partial tag', () => {
      const think = createStreamProcessor('think_block');
      assert.deepEqual(fromChunks(think.push(chunk({ content: '<think>Hel' }))).reasoning, 'Hel');
      assert.deepEqual(think.push(chunk({ content: 'lo</thi' })).map((c) => c.choices[0]?.delta), [{ reasoning_content: 'lo' }]);
      assert.deepEqual(think.push(chunk({ content: 'nk>\n' })), []);
      assert.deepEqual(think.push(chunk({ content: 'Hi' })).map((c) => c.choices[0]?.delta), [{ content: 'Hi' }]);
      const qwen = createStreamProcessor('qwen_coder');
      assert.deepEqual(fromChunks(qwen.push(chunk({ content: 'Hello <tool_ca' }))).content, 'Hello');
      assert.deepEqual(fromChunks(qwen.push(chunk({ content: 'lls>' }))).content, ' <tool_calls>');
    });

    it('emits a tool call when its closing tag arrives and marks the finishing chunk', () => {
      const processor = createStreamProcessor('qwen_coder');
      const head = QWEN_CALL.slice(0, -1);
      assert.deepEqual(processor.push(chunk({ content: head })), []);
      const [emitted] = processor.push(chunk({ content: '>' }));
      assert.deepEqual(emitted?.choices[0]?.delta.tool_calls?.map((c) => [c.index, c.id, c.function?.name]), [[0, 'call_chatcmpltest1_0', 'get_weather']]);
      const [last] = processor.push(chunk({ content: '\n' }, 'stop'));
      assert.deepEqual(last?.choices[0], { index: 0, delta: {}, finish_reason: 'tool_calls' });
      assert.deepEqual(processor.finish(), []);
    });

    it('flushes held text on the finishing chunk, or at finish() when none came', () => {
      const processor = createStreamProcessor('qwen_coder');
      processor.push(chunk({ content: 'a <tool_call>\n<function=f>' }));
      const [last] = processor.push(chunk({ content: '\n' }, 'length'));
      assert.deepEqual(last?.choices[0], { index: 0, delta: { content: ' <tool_call>\n<function=f>\n' }, finish_reason: 'length' });
      const truncated = fromChunks(stream('think_block', ['x</thi'], null));
      assert.deepEqual(truncated, { content: 'x</thi', reasoning: '', calls: [], finish: null });
    });

    it('keeps upstream reasoning and tool calls, numbering ours after them', () => {
      const think = createStreamProcessor('think_block');
      assert.deepEqual(fromChunks(think.push(chunk({ reasoning_content: 'up', content: '<think>r' }))).reasoning, 'upr');
      const glm = createStreamProcessor('glm');
      const upstream = { index: 0, id: 'up', type: 'function' as const, function: { name: 'u', arguments: '{}' } };
      const out = [...glm.push(chunk({ tool_calls: [upstream] })), ...glm.push(chunk({ content: GLM_CALL }, 'tool_calls'))];
      assert.deepEqual(fromChunks(out).calls.map((c) => c.id), ['up', 'call_chatcmpltest1_1']);
    });

    it('keeps separate state per choice', () => {
      const processor = createStreamProcessor('think_block');
      const out = [
        ...processor.push(chunk({ content: '<think>a' }, null, 0)), ...processor.push(chunk({ content: 'b' }, null, 1)),
        ...processor.push(chunk({ content: '</think>c' }, 'stop', 0)), ...processor.push(chunk({ content: '</think>d' }, 'stop', 1)),
      ];
      const of = (index: number): Outcome => fromChunks(out.map((c) => ({ ...c, choices: c.choices.filter((x) => x.index === index) })));
      assert.deepEqual([of(0).reasoning, of(0).content, of(1).reasoning, of(1).content], ['a', 'c', 'b', 'd']);
    });
  });
});
