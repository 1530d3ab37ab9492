/**
 * Messages-surface request → chat body and chat completion → message (docs/inference-surfaces.md
 * "Messages surface"): the translation table, and each bad input a 400 naming its field.
 */
import assert from 'node:assert/strict';
import { AppError } from '../../../lib/errors';
import { messagesToChat, readMessagesRequest } from '../../../gateway/translate/messages-surface/request';
import { chatToMessage, messagesUsage, toolInput } from '../../../gateway/translate/messages-surface/response';
import { messagesErrorType } from '../../../gateway/translate/messages-surface/errors';
import type { ChatCompletion } from '../../../gateway/processors/types';
import type { Usage } from '../../../gateway/surfaces/usage';

const base = { model: 'm', max_tokens: 10 };
const user = (content: unknown) => ({ role: 'user', content });
const toolUse = { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'text', text: 'ok' }, { type: 'tool_use', id: 't1', name: 'bash', input: { c: 1 } }] };

function refused(body: unknown, param: string): void {
  assert.throws(() => messagesToChat(body), (err: unknown) => err instanceof AppError && err.status === 400 && err.param === param && err.message.includes(param), param);
}

describe('messages surface: request translation', () => {
  it('maps system, blocks, tools, tool_choice and parameters to chat', () => {
    const chat = messagesToChat({
      ...base, system: 'sys', stop_sequences: ['X'], temperature: 0.1, top_p: 0.9, top_k: 5, metadata: { user_id: 'u1' }, stream: true,
      tools: [{ name: 'bash', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'bash', disable_parallel_tool_use: true },
      messages: [user('hi'), toolUse, user([{ type: 'tool_result', tool_use_id: 't1', content: 'out', is_error: true }])],
    });
    assert.deepEqual(chat, {
      model: 'm', max_tokens: 10, stream: true, stop: ['X'], temperature: 0.1, top_p: 0.9, top_k: 5, user: 'u1',
      tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'bash' } }, parallel_tool_calls: false,
      messages: [
        { role: 'system', content: 'sys' }, { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'ok', tool_calls: [{ id: 't1', type: 'function', function: { name: 'bash', arguments: '{"c":1}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'Error: out' },
      ],
    });
  });

  it('maps tool_choice auto / any / none', () => {
    for (const [type, choice] of [['auto', 'auto'], ['any', 'required'], ['none', 'none']] as const) {
      assert.equal(messagesToChat({ ...base, messages: [user('x')], tool_choice: { type } }).tool_choice, choice);
    }
  });

  it('keeps a system turn inside the conversation in its place (string or text blocks)', () => {
    const chat = messagesToChat({
      ...base, system: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b', cache_control: { type: 'ephemeral' } }],
      messages: [user('hi'), { role: 'system', content: [{ type: 'text', text: 'env', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'more' }] }, { role: 'system', content: 'plain' }],
    });
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'a\n\nb' }, { role: 'user', content: 'hi' },
      { role: 'system', content: 'env\n\nmore' }, { role: 'system', content: 'plain' },
    ]);
  });

  it('drops cache_control on every block, thinking, context_management and output_config (no chat equivalent)', () => {
    const cache = { cache_control: { type: 'ephemeral', ttl: '1h' } };
    const chat = messagesToChat({
      ...base, max_tokens: 128000, thinking: { type: 'adaptive', display: 'updates' }, context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'medium' }, metadata: { user_id: '{"device_id":"d","session_id":"s"}' },
      tools: [{ name: 'bash', input_schema: { type: 'object' }, ...cache, strict: true, input_examples: [{}] }],
      messages: [
        user([{ type: 'text', text: 'hi', ...cache }, { type: 'image', source: { type: 'url', url: 'https://x/i.png' }, ...cache }]),
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 't1', name: 'bash', input: {}, ...cache }] },
        user([{ type: 'tool_result', tool_use_id: 't1', content: 'ok', ...cache }]),
      ],
    });
    assert.deepEqual(chat, {
      model: 'm', max_tokens: 128000, stream: false, user: '{"device_id":"d","session_id":"s"}',
      tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'https://x/i.png' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'bash', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'ok' },
      ],
    });
  });

  it('leaves out tools of another type and deferred tools until a tool_reference loads them; never refuses one offered', () => {
    const offered = [
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
      { type: 'bash_20250124', name: 'bash' },
      { name: 'Write', input_schema: { type: 'object' } },
      { type: 'custom', name: 'Read', input_schema: { type: 'object' } },
      { name: 'Cron', description: 'deferred', input_schema: { type: 'object' }, defer_loading: true },
      { name: 'Placeholder', input_schema: { type: 'object', properties: {} }, defer_loading: true },
    ];
    const names = (chat: Record<string, unknown>) => (chat.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    assert.deepEqual(names(messagesToChat({ ...base, tools: offered, messages: [user('x')] })), ['Write', 'Read']);
    const loaded = messagesToChat({
      ...base, tools: offered,
      messages: [
        user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 's1', name: 'ToolSearch', input: { query: 'select:Cron' } }] },
        user([{ type: 'tool_result', tool_use_id: 's1', content: [{ type: 'tool_reference', tool_name: 'Cron' }] }]),
      ],
    });
    assert.deepEqual(names(loaded), ['Write', 'Read', 'Cron']);
    assert.deepEqual((loaded.messages as unknown[]).at(-1), { role: 'tool', tool_call_id: 's1', content: 'Tool loaded: Cron' });
    const none = messagesToChat({ ...base, tools: [offered[0]], tool_choice: { type: 'auto' }, messages: [user('x')] });
    assert.equal(none.tools, undefined);
    assert.equal(none.tool_choice, undefined);
  });

  it('keeps a refusal of the translation apart from the structural checks (a messages-API route takes the body as sent)', () => {
    const body = { ...base, system: 'sys', messages: [user('a'), { role: 'system', content: 'env' }, user([{ type: 'document', source: { type: 'text', data: 'x' } }])] };
    const read = readMessagesRequest(body);
    assert.equal(read.untranslatable?.param, 'messages[2].content[0].type');
    assert.equal(read.body, body);
    assert.deepEqual(read.chat.messages, [{ role: 'system', content: 'sys' }, { role: 'user', content: 'a' }, { role: 'system', content: 'env' }]);
    assert.throws(() => readMessagesRequest({ ...base, messages: [{ role: 'tool', content: 'x' }] }), (err: unknown) => err instanceof AppError && err.param === 'messages[0].role');
    assert.equal(readMessagesRequest({ model: 'family-4-6', max_tokens: 1, messages: [user('x')] }).model, 'family-4.6');
  });

  it('count_tokens needs no max_tokens', () => {
    assert.equal(messagesToChat({ model: 'm', messages: [user('x')] }, { countOnly: true }).max_tokens, undefined);
  });

  it('refuses bad input with a 400 naming the field', () => {
    refused({ messages: [user('x')], max_tokens: 1 }, 'model');
    refused({ model: 'm', messages: [user('x')] }, 'max_tokens');
    refused({ ...base, max_tokens: 0, messages: [user('x')] }, 'max_tokens');
    refused({ ...base, max_tokens: 1.5, messages: [user('x')] }, 'max_tokens');
    refused({ ...base, messages: [] }, 'messages');
    refused({ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role');
    refused({ ...base, messages: [{ role: 'system', content: [{ type: 'image', source: {} }] }] }, 'messages[0].content[0].type');
    refused({ ...base, messages: [user(5)] }, 'messages[0].content');
    refused({ ...base, messages: [user([{ type: 'document', source: {} }])] }, 'messages[0].content[0].type');
    refused({ ...base, messages: [user([{ type: 'tool_use', id: 'a', name: 'b', input: {} }])] }, 'messages[0].content[0].type');
    refused({ ...base, messages: [{ role: 'assistant', content: [{ type: 'image', source: {} }] }] }, 'messages[0].content[0].type');
    refused({ ...base, messages: [user([{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }])] }, 'messages[0].content[0].tool_use_id');
    refused({ ...base, messages: [user([{ type: 'tool_result', tool_use_id: 't1' }]), toolUse] }, 'messages[0].content[0].tool_use_id');
    refused({ ...base, messages: [user([{ type: 'text' }])] }, 'messages[0].content[0].text');
    refused({ ...base, messages: [user([{ type: 'image', source: { type: 'base64', media_type: 'text/html', data: 'x' } }])] }, 'messages[0].content[0].source.media_type');
    refused({ ...base, messages: [user([{ type: 'image', source: { type: 'file', file_id: 'f' } }])] }, 'messages[0].content[0].source.type');
    refused({ ...base, system: [{ type: 'image' }], messages: [user('x')] }, 'system[0].type');
    refused({ ...base, messages: [user('x')], tools: [{ name: 'a', input_schema: {}, defer_loading: 'yes' }] }, 'tools[0].defer_loading');
    refused({ ...base, messages: [toolUse, user([{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'tool_reference' }] }])] }, 'messages[1].content[0].content[0].tool_name');
    refused({ ...base, messages: [user('x')], tools: [{ name: 'a' }] }, 'tools[0].input_schema');
    refused({ ...base, messages: [user('x')], tool_choice: { type: 'tool' } }, 'tool_choice.name');
    refused({ ...base, messages: [user('x')], tool_choice: { type: 'maybe' } }, 'tool_choice.type');
    refused({ ...base, messages: [user('x')], stop_sequences: 'END' }, 'stop_sequences');
    refused({ ...base, messages: [user('x')], temperature: 'hot' }, 'temperature');
    refused({ ...base, messages: [user('x')], stream: 'yes' }, 'stream');
    refused({ ...base, messages: [user('x')], metadata: { user_id: 5 } }, 'metadata.user_id');
    refused({ ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'b', input: 'x' }] }] }, 'messages[0].content[0].input');
  });
});

describe('messages surface: response translation', () => {
  const completion = (message: Record<string, unknown>, finish: string, extra: Record<string, unknown> = {}) => ({
    id: 'c1', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message, finish_reason: finish, ...extra }],
    usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 3 } },
  }) as unknown as ChatCompletion & { usage?: Usage };

  it('reasoning, text and tool calls become thinking, text and tool_use blocks', () => {
    const message = chatToMessage(completion({ role: 'assistant', reasoning_content: 'r', content: 't', tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, 'tool_calls'), { model: 'asked', stopSequences: undefined });
    assert.deepEqual(message, {
      id: 'msg_c1', type: 'message', role: 'assistant', model: 'asked', stop_reason: 'tool_use', stop_sequence: null,
      content: [{ type: 'thinking', thinking: 'r', signature: '' }, { type: 'text', text: 't' }, { type: 'tool_use', id: 'x', name: 'f', input: { a: 1 } }],
      usage: { input_tokens: 7, output_tokens: 4, cache_read_input_tokens: 3, cache_creation_input_tokens: 0 },
    });
  });

  it('maps finish reasons to stop reasons', () => {
    const reason = (finish: string, extra: Record<string, unknown> = {}, stops?: string[]) => chatToMessage(completion({ content: 'x' }, finish, extra), { model: 'm', stopSequences: stops }).stop_reason;
    assert.equal(reason('stop'), 'end_turn');
    assert.equal(reason('length'), 'max_tokens');
    assert.equal(reason('content_filter'), 'refusal');
    assert.equal(reason('stop', { stop_reason: 'END' }, ['END']), 'stop_sequence');
    assert.equal(reason('stop', { stop_reason: 'END' }, ['OTHER']), 'end_turn');
    assert.equal(reason('stop', { stop_reason: 128001 }, ['END']), 'end_turn');
  });

  it('keeps invalid tool arguments raw; unknown cache counts as 0', () => {
    assert.deepEqual(toolInput(''), {});
    assert.deepEqual(toolInput('{"a":'), { _raw_arguments: '{"a":' });
    assert.deepEqual(toolInput('[1]'), { _raw_arguments: '[1]' });
    assert.deepEqual(messagesUsage({ prompt_tokens: 5, completion_tokens: 1 }), { input_tokens: 5, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  });

  it('names error types by status', () => {
    assert.deepEqual([400, 401, 403, 404, 413, 429, 500, 502, 503, 504, 529].map(messagesErrorType), [
      'invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error',
      'api_error', 'api_error', 'overloaded_error', 'timeout_error', 'overloaded_error',
    ]);
  });
});
