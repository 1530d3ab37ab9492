/**
 * Chat-completions SSE streams translated to Responses-API events by the real relay with the
 * responses shape, the upstream bytes cut at every byte boundary: the output is the same as for the
 * whole stream, and it is the documented sequence (docs/inference-surfaces.md "`POST /v1/responses`").
 * Also a native (Responses-API) stream through the event relay, cut at every byte boundary.
 */
import assert from 'node:assert/strict';
import { relayAtCuts } from '../../support/stream-relay';
import type { Route } from '../../../gateway/registry';
import { chatUsageOf, ResponsesEventRelay } from '../../../gateway/surfaces/responses-relay';
import { responsesToChat } from '../../../gateway/translate/responses-surface/request';
import { responseContext } from '../../../gateway/translate/responses-surface/response';
import { ResponsesStream } from '../../../gateway/translate/responses-surface/stream';

type Json = Record<string, unknown>;

const ROUTE = { processor: 'default', nullCacheDetailsMeansMiss: false } as unknown as Route;

const chunk = (delta: Json, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (prompt: number, completion: number, cached?: number): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } }) } })}\n\n`;

/** The tools a Codex request offers, in miniature: a function, a namespace, a freeform tool, hosted tools. */
const TOOLS = [
  { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
  { type: 'namespace', name: 'multi_agent_v1', description: 'agents', tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } }] },
  { type: 'custom', name: 'apply_patch', description: 'patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } },
  { type: 'web_search', external_web_access: true },
];

const STREAMS: Record<string, string> = {
  text: chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo 🌍' }) + chunk({}, 'stop') + usage(10, 2, 4) + 'data: [DONE]\n\n',
  'reasoning, text, calls': chunk({ role: 'assistant', reasoning_content: 'think ' }) + chunk({ reasoning_content: 'hard' }) + chunk({ content: 'Let me run it.' })
    + chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'exec_', arguments: '' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { name: 'command' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { arguments: '{"cmd":' } }] })
    + chunk({ tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] })
    + chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'multi_agent_v1__spawn_agent', arguments: '{}' } }] })
    + chunk({ tool_calls: [{ index: 2, id: 'call_c', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin' } }] })
    + chunk({ tool_calls: [{ index: 2, function: { arguments: ' Patch\\n"}' } }] })
    + chunk({}, 'tool_calls') + usage(30, 12) + 'data: [DONE]\n\n',
  'length, CRLF': (chunk({ content: 'héllo ' }) + chunk({ content: '日本語' }) + chunk({}, 'length')).replaceAll('\n', '\r\n') + usage(3, 4),
};

function translate(bytes: Buffer, cuts: number[]): string {
  const { names } = responsesToChat({ model: 'codex', input: 'x', tools: TOOLS });
  return relayAtCuts(new ResponsesStream({ ...responseContext('codex', names), base: 'b', createdAt: 1 }), bytes, cuts).text;
}

function parse(text: string): Json[] {
  return text.split('\n\n').filter(Boolean).map((frame) => {
    const [eventLine, dataLine] = frame.split('\n');
    const data = JSON.parse(dataLine!.slice('data: '.length)) as Json;
    assert.equal(eventLine, `event: ${data.type as string}`);
    return data;
  });
}

describe('responses surface: chat stream → Responses events', () => {
  for (const [name, stream] of Object.entries(STREAMS)) {
    it(`gives the same events for "${name}" at every byte boundary`, () => {
      const bytes = Buffer.from(stream);
      const whole = translate(bytes, []);
      for (let cut = 1; cut < bytes.length; cut += 1) assert.equal(translate(bytes, [cut]), whole, `cut at ${cut}`);
      assert.equal(translate(bytes, [...Array(bytes.length).keys()]), whole, 'one byte at a time');
      const events = parse(whole);
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i), 'numbered from 0, no gaps');
    });
  }

  it('streams text as one message item, then response.completed with usage', () => {
    const events = parse(translate(Buffer.from(STREAMS.text!), []));
    assert.deepEqual(events.map((e) => e.type), [
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
      'response.output_item.done', 'response.completed',
    ]);
    const response = events.at(-1)!.response as Json;
    assert.equal(response.status, 'completed');
    assert.deepEqual(response.usage, { input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 });
    assert.deepEqual((response.output as Json[])[0], { type: 'message', id: 'msg_b', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello 🌍', annotations: [] }] });
  });

  it('streams reasoning, a message, a function call, a namespaced call and a freeform call as items in order, names mapped back', () => {
    const events = parse(translate(Buffer.from(STREAMS['reasoning, text, calls']!), []));
    assert.deepEqual(events.map((e) => e.type), [
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      'response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done',
      'response.completed',
    ]);
    const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item as Json);
    assert.equal(added[2]!.name, 'exec_command', 'a name sent in pieces arrives whole');
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item as Json);
    assert.deepEqual(done.map((i) => i.type), ['reasoning', 'message', 'function_call', 'function_call', 'custom_tool_call']);
    assert.deepEqual(done[0]!.summary, [{ type: 'summary_text', text: 'think hard' }]);
    assert.deepEqual([done[2]!.name, done[2]!.call_id, done[2]!.arguments], ['exec_command', 'call_a', '{"cmd":"ls"}']);
    assert.deepEqual([done[3]!.name, done[3]!.namespace, done[3]!.call_id], ['spawn_agent', 'multi_agent_v1', 'call_b']);
    assert.deepEqual([done[4]!.name, done[4]!.call_id, done[4]!.input], ['apply_patch', 'call_c', '*** Begin Patch\n']);
    const completed = events.at(-1)!.response as Json;
    assert.deepEqual(completed.output, done, 'response.completed carries the same items');
    assert.deepEqual(done.map((_, i) => i), events.filter((e) => e.type === 'response.output_item.done').map((e) => e.output_index));
  });

  it('ends with response.incomplete after finish_reason length', () => {
    const events = parse(translate(Buffer.from(STREAMS['length, CRLF']!), []));
    const last = events.at(-1)!;
    assert.equal(last.type, 'response.incomplete');
    assert.deepEqual((last.response as Json).incomplete_details, { reason: 'max_output_tokens' });
  });

  it('reports an upstream failure as response.failed, numbered after the last event', () => {
    const stream = new ResponsesStream({ ...responseContext('m', responsesToChat({ model: 'm', input: 'x' }).names), base: 'b' });
    const frames = [...stream.start(), ...stream.frames(JSON.parse(STREAMS.text!.split('\n\n')[1]!.slice(6)) as never)];
    const failed = parse(stream.error('Upstream stream failed: reset'))[0]!;
    assert.equal(failed.type, 'response.failed');
    assert.equal(failed.sequence_number, parse(frames.join('')).length);
    assert.deepEqual((failed.response as Json).error, { code: 'server_error', message: 'Upstream stream failed: reset' });
  });
});

describe('responses surface: a Responses-API upstream stream relayed', () => {
  const event = (type: string, n: number, payload: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...payload })}\n\n`;
  const upstream = event('response.created', 0, { response: { id: 'resp_u', status: 'in_progress' } })
    + event('response.output_text.delta', 1, { item_id: 'm', output_index: 0, content_index: 0, delta: 'response.completed 🌍' })
    + ': a comment\r\n\r\n'
    + event('response.completed', 2, { response: { id: 'resp_u', status: 'completed', usage: { input_tokens: 9, output_tokens: 2, total_tokens: 11, input_tokens_details: { cached_tokens: 3 } } } });

  it('forwards the upstream bytes unchanged, only whole events, at every byte boundary', () => {
    const bytes = Buffer.from(upstream);
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const relay = new ResponsesEventRelay();
      const pieces = [relay.push(bytes.subarray(0, cut)), relay.push(bytes.subarray(cut)), relay.end()];
      assert.equal(Buffer.concat(pieces).toString(), upstream, `cut at ${cut}`);
      for (const piece of pieces.slice(0, 2)) if (piece.length > 0) assert.match(piece.toString(), /\n\r?\n$/, 'a piece ends at an event boundary');
      assert.deepEqual([relay.responseId, relay.lastSequence, relay.terminal], ['resp_u', 2, 'response.completed']);
    }
  });

  it('turns the usage of response.completed into the chat usage the request log reads', () => {
    const relay = new ResponsesEventRelay();
    relay.push(Buffer.from(upstream));
    const chat = chatUsageOf(relay.usage, ROUTE);
    assert.deepEqual([chat?.prompt_tokens, chat?.completion_tokens, chat?.total_tokens, chat?.cache_read_tokens], [9, 2, 11, 3]);
    assert.equal(chatUsageOf(undefined, ROUTE), undefined);
    assert.match(relay.failedEvent('boom'), /^event: response\.failed\ndata: \{"type":"response\.failed","sequence_number":3,"response":\{"id":"resp_u"/);
  });
});
