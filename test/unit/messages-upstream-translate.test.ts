/**
 * Chat ↔ messages-API translation for message-format routes: the request body (system, content
 * blocks, images, tool_use / tool_result, merging, tools, tool_choice, max_tokens, stop, user,
 * per-dialect model and version), the response (text, tool calls, thinking, stop reasons, usage
 * with cache tokens), URLs and headers of the three kinds, and the token-count body.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../lib/errors';
import { buildChatBody, messagesUrlsFor, resolveAdapterKind, upstreamHeaders, type WireRoute } from '../../gateway/adapters';
import { countTokensBody } from '../../gateway/translate/messages-upstream/count-tokens';
import { chatCompletionOf, finishReasonOf, type MessagesResponse } from '../../gateway/translate/messages-upstream/response';

const route = (overrides: Partial<WireRoute> = {}): WireRoute => ({
  kind: 'vendor_h_direct', providerModelId: 'claude-x', maxOutputLength: 4096, supportsTools: true, priorityScheduling: false,
  supportedParams: ['temperature', 'top_p', 'max_tokens', 'stop', 'user'], ...overrides,
});
const plain = { stream: false, tier: 'interactive' } as const;
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function assertInvalid(fn: () => unknown, param: string): void {
  assert.throws(fn, (err: unknown) => err instanceof AppError && err.status === 400 && err.param === param);
}

describe('messages-upstream: request translation', () => {
  it('translates a tools round trip with system, images, tool results and merged turns', () => {
    const client = {
      model: 'public-id', stream: true, max_tokens: 9000, temperature: 0.2, top_p: 0.9, stop: 'END', user: 'u-42', seed: 7,
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use tools.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Weather here?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } }] },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '21°C' },
        { role: 'user', content: 'Thanks' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'required',
    };
    const body = buildChatBody(route(), client, { stream: true, tier: 'interactive' });
    assert.deepEqual(body, {
      system: [{ type: 'text', text: 'Be terse.' }, { type: 'text', text: 'Use tools.' }],
      messages: [
        { role: 'user', content: [
          { type: 'text', text: 'Weather here?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
        ] },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21°C' }, { type: 'text', text: 'Thanks' }] },
      ],
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
      max_tokens: 4096, temperature: 0.2, top_p: 0.9, stop_sequences: ['END'], metadata: { user_id: 'u-42' },
      model: 'claude-x', stream: true,
    });
    assert.equal(client.messages.length, 7, 'the client body is not mutated');
  });

  it('uses max_output_length when the client gives no max_tokens, and the smaller of two limits', () => {
    assert.equal(buildChatBody(route(), { messages: [{ role: 'user', content: 'x' }] }, plain).max_tokens, 4096);
    const both = buildChatBody(route({ supportedParams: ['max_tokens', 'max_completion_tokens'] }), { messages: [], max_tokens: 300, max_completion_tokens: 200 }, plain);
    assert.equal(both.max_tokens, 200);
    assert.equal('max_completion_tokens' in both, false);
  });

  it('maps tool_choice and drops tools on routes without tool support; parameters follow supported_params', () => {
    const choice = (value: unknown) => buildChatBody(route(), { messages: [], tool_choice: value }, plain).tool_choice;
    assert.deepEqual(choice('auto'), { type: 'auto' });
    assert.deepEqual(choice('none'), { type: 'none' });
    assert.deepEqual(choice({ type: 'function', function: { name: 'f' } }), { type: 'tool', name: 'f' });
    const noTools = buildChatBody(route({ supportsTools: false, supportedParams: undefined }), { messages: [], tools: [], tool_choice: 'auto', stop: ['x'], user: 'u', temperature: 1 }, plain);
    assert.deepEqual(Object.keys(noTools).sort(), ['max_tokens', 'messages', 'model', 'stream', 'temperature']);
  });

  it('puts the version in the body and no model for the cloud variant; extra_body goes under', () => {
    const body = buildChatBody(route({ kind: 'vendor_h_cloud', extraBody: { thinking: { type: 'enabled', budget_tokens: 2048 }, model: 'x' } }), { messages: [] }, plain);
    assert.equal(body.anthropic_version, 'vertex-2023-10-16');
    assert.equal('model' in body, false);
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 2048 });
    assert.equal(buildChatBody(route({ kind: 'vendor_g_api' }), { messages: [] }, plain).model, 'claude-x');
  });

  it('maps an accepted reasoning_effort to a thinking budget and refuses others', () => {
    const r = route({ supportedParams: ['reasoning_effort', 'max_tokens'], reasoningEfforts: ['low', 'high'] });
    assert.deepEqual(buildChatBody(r, { messages: [], reasoning_effort: 'high' }, plain).thinking, { type: 'enabled', budget_tokens: 4095 });
    assert.deepEqual(buildChatBody(r, { messages: [], reasoning_effort: 'low', max_tokens: 3000 }, plain).thinking, { type: 'enabled', budget_tokens: 1024 });
    assertInvalid(() => buildChatBody(r, { messages: [], reasoning_effort: 'medium' }, plain), 'reasoning_effort');
  });

  it('refuses malformed input with a 400 naming the field', () => {
    const build = (messages: unknown, extra: Record<string, unknown> = {}) => () => buildChatBody(route(), { messages, ...extra }, plain);
    assertInvalid(build([{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }]), 'messages[0].content[0].type');
    assertInvalid(build([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }]), 'messages[0].content[0].image_url.url');
    assertInvalid(build([{ role: 'assistant', tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{not json' } }] }]), 'messages[0].tool_calls[0].function.arguments');
    assertInvalid(build([{ role: 'tool', content: 'x' }]), 'messages[0].tool_call_id');
    assertInvalid(build([{ role: 'narrator', content: 'x' }]), 'messages[0].role');
    assertInvalid(build([], { tools: [{ type: 'retrieval' }] }), 'tools[0]');
    assertInvalid(build([], { stop: 5 }), 'stop');
    assertInvalid(build([], { max_tokens: 'many' }), 'max_tokens');
  });
});

describe('messages-upstream: response translation', () => {
  const recorded = JSON.parse(readFileSync(join(__dirname, '../fixtures/messages-upstream/message-tools.json'), 'utf8')) as MessagesResponse;

  it('turns a recorded tool-use message into a chat completion with reasoning and cache usage', () => {
    const completion = chatCompletionOf(recorded, 1700000000);
    assert.deepEqual(completion, {
      id: 'msg_01Aq9w938a90dw8q', object: 'chat.completion', created: 1700000000, model: 'claude-sonnet-4-5-20250929',
      choices: [{
        index: 0, finish_reason: 'tool_calls', logprobs: null,
        message: {
          role: 'assistant', content: "I'll look that up.", reasoning_content: 'I should call the tool.',
          tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' } }],
        },
      }],
      usage: {
        prompt_tokens: 2095 + 1800 + 12, completion_tokens: 503, total_tokens: 2095 + 1800 + 12 + 503,
        prompt_tokens_details: { cached_tokens: 1800 }, cache_read_input_tokens: 1800, cache_creation_input_tokens: 12,
      },
    });
  });

  it('gives null content for a tool-only answer and maps every stop reason', () => {
    const toolOnly = chatCompletionOf({ content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }], stop_reason: 'tool_use' });
    assert.equal(toolOnly.choices[0]?.message.content, null);
    assert.equal(toolOnly.choices[0]?.message.tool_calls?.[0]?.function.arguments, '{}');
    const table: Array<[string | null, string | null]> = [['end_turn', 'stop'], ['stop_sequence', 'stop'], ['max_tokens', 'length'], ['tool_use', 'tool_calls'], ['refusal', 'content_filter'], [null, null]];
    for (const [stop, finish] of table) assert.equal(finishReasonOf(stop), finish, String(stop));
  });
});

describe('messages-upstream: URLs, headers, token count body', () => {
  it('joins each kind\'s URLs onto the base', () => {
    const urls = (kind: string, base: string) => messagesUrlsFor(resolveAdapterKind(kind).messages!, base, 'claude-x@2025');
    assert.deepEqual(urls('vendor_h_direct', 'https://api.h.example//'), {
      create: 'https://api.h.example/v1/messages', stream: 'https://api.h.example/v1/messages', countTokens: 'https://api.h.example/v1/messages/count_tokens',
    });
    assert.equal(urls('vendor_g_api', 'https://g.example/anthropic/v1/').create, 'https://g.example/anthropic/v1/messages');
    const cloud = 'https://r-ai.example/v1/projects/p/locations/r/publishers/h';
    assert.deepEqual(urls('vendor_h_cloud', `${cloud}/`), {
      create: `${cloud}/models/claude-x@2025:rawPredict`, stream: `${cloud}/models/claude-x@2025:streamRawPredict`, countTokens: `${cloud}/models/count-tokens:rawPredict`,
    });
  });

  it('sends each kind\'s auth and version headers', () => {
    assert.deepEqual(upstreamHeaders('sk-1', resolveAdapterKind('vendor_h_direct')), { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-1' });
    assert.deepEqual(upstreamHeaders('g-1', resolveAdapterKind('vendor_g_api')), { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', Authorization: 'Bearer g-1' });
    assert.deepEqual(upstreamHeaders('tok', resolveAdapterKind('vendor_h_cloud')), { 'content-type': 'application/json', Authorization: 'Bearer tok' });
    assert.deepEqual(upstreamHeaders(undefined, resolveAdapterKind('vendor_h_direct')), { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
  });

  it('keeps only the counted fields of a messages body', () => {
    const body = { model: 'public', max_tokens: 10, stream: true, system: 's', messages: [{ role: 'user', content: 'hi' }], tools: [], metadata: {} };
    assert.deepEqual(countTokensBody({ providerModelId: 'claude-x' }, body, resolveAdapterKind('vendor_h_direct').messages!), {
      model: 'claude-x', system: 's', messages: [{ role: 'user', content: 'hi' }], tools: [],
    });
    assert.equal(countTokensBody({ providerModelId: 'm' }, body, resolveAdapterKind('vendor_h_cloud').messages!).anthropic_version, 'vertex-2023-10-16');
  });
});
