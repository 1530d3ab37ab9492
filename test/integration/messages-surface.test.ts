/**
 * The official `@anthropic-ai/sdk` client, unchanged, against the real gateway's messages surface
 * on 127.0.0.1 with a fake chat-completions upstream: create, stream (helper and raw events),
 * tools round trip, images, countTokens, the prefix mirror, name translation and no fallback.
 */
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

type Wire = { model: string; messages: Array<Record<string, unknown>>; max_tokens?: number; tools?: unknown; tool_choice?: unknown; stop?: unknown; stream?: boolean };

describe('messages surface: official @anthropic-ai/sdk client', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let second: FakeUpstream;
  let gw: TestGateway;
  let client: Anthropic;
  const wire = () => upstream.chatRequests().at(-1)?.body as Wire;

  before(async () => {
    upstream = await startFakeUpstream();
    second = await startFakeUpstream();
    gw = await startTestGateway({
      env: { MESSAGES_PREFIX: 'claude-proxy' },
      modelsYaml: `models:
  - { id: family-4.6, name: Family, provider: generic_compat, base_url: "${upstream.url}", max_output_length: 1000, supported_params: [temperature, max_tokens, stop], supports_tools: true, input_modalities: [text, image] }
  - id: two-routes
    name: Two
    route:
      - { kind: generic_compat, base_url: "${upstream.url}", weight: 1 }
      - { kind: generic_compat, base_url: "${second.url}", weight: 1 }
`,
    });
    client = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
  });
  after(() => closeAll(gw, upstream, second));

  it('creates a message: system and blocks in, text and messages usage out, max_tokens clamped', async () => {
    upstream.enqueue({ kind: 'json', content: 'hello client', usage: { prompt_tokens: 20, completion_tokens: 3, cached_tokens: 8 } });
    const message = await client.messages.create({
      model: 'family-4.6', max_tokens: 5000, system: [{ type: 'text', text: 'Be brief.' }], stop_sequences: ['END'],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    assert.equal(message.type, 'message');
    assert.match(message.id, /^msg_/);
    assert.equal(message.model, 'family-4.6');
    assert.deepEqual(message.content, [{ type: 'text', text: 'hello client' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.usage, { input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 8, cache_creation_input_tokens: 0 });
    const body = wire();
    assert.deepEqual(body.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    assert.equal(body.max_tokens, 1000);
    assert.deepEqual(body.stop, ['END']);
  });

  it('streams with the messages.stream helper: text deltas, final message and usage', async () => {
    upstream.enqueue({ kind: 'sse', pieces: ['one ', 'two ', 'three'], usage: { prompt_tokens: 9, completion_tokens: 3, cached_tokens: 4 } });
    const stream = client.messages.stream({ model: 'family-4.6', max_tokens: 50, messages: [{ role: 'user', content: 'Count' }] });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    const final = await stream.finalMessage();
    assert.equal(text, 'one two three');
    assert.deepEqual(final.content, [{ type: 'text', text: 'one two three' }]);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.input_tokens, 5);
    assert.equal(final.usage.cache_read_input_tokens, 4);
    assert.equal(final.usage.output_tokens, 3);
    assert.equal(wire().stream, true);
  });

  it('streams raw events in the documented order', async () => {
    upstream.enqueue({ kind: 'sse', pieces: ['a', 'b'] });
    const types: string[] = [];
    for await (const event of await client.messages.create({ model: 'family-4.6', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] })) types.push(event.type);
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  });

  it('round-trips tools: tool_use out (input parsed), tool_result back as a tool message', async () => {
    upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'ls' }, id: 'call_7' });
    const tools = [{ name: 'bash', description: 'Run a command', input_schema: { type: 'object' as const, properties: { command: { type: 'string' } } } }];
    const first = await client.messages.create({ model: 'family-4.6', max_tokens: 100, tools, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'list files' }] });
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(first.content, [{ type: 'tool_use', id: 'call_7', name: 'bash', input: { command: 'ls' } }]);
    assert.deepEqual(wire().tools, [{ type: 'function', function: { name: 'bash', description: 'Run a command', parameters: tools[0]!.input_schema } }]);
    assert.equal(wire().tool_choice, 'required');
    upstream.enqueue({ kind: 'json', content: 'two files' });
    const second = await client.messages.create({
      model: 'family-4.6', max_tokens: 100, tools,
      messages: [
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_7', content: [{ type: 'text', text: 'a.txt b.txt' }] }, { type: 'text', text: 'and?' }] },
      ],
    });
    assert.deepEqual(second.content, [{ type: 'text', text: 'two files' }]);
    assert.deepEqual(wire().messages.slice(1), [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_7', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: 'call_7', content: 'a.txt b.txt' },
      { role: 'user', content: [{ type: 'text', text: 'and?' }] },
    ]);
  });

  it('streams a tool call as input_json_delta and the helper assembles the input', async () => {
    upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'pwd' }, id: 'call_9' });
    const final = await client.messages.stream({ model: 'family-4.6', max_tokens: 100, messages: [{ role: 'user', content: 'where' }] }).finalMessage();
    assert.deepEqual(final.content, [{ type: 'tool_use', id: 'call_9', name: 'bash', input: { command: 'pwd' } }]);
    assert.equal(final.stop_reason, 'tool_use');
  });

  it('sends image blocks (base64 and url) upstream as image_url parts', async () => {
    await client.messages.create({
      model: 'family-4.6', max_tokens: 10,
      messages: [{ role: 'user', content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.test/cat.jpg' } },
        { type: 'text', text: 'what is this' },
      ] }],
    });
    assert.deepEqual(wire().messages[0]!.content, [
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'https://example.test/cat.jpg' } },
      { type: 'text', text: 'what is this' },
    ]);
  });

  it('counts tokens with the local estimate, also under the prefix', async () => {
    const small = await client.messages.countTokens({ model: 'family-4.6', messages: [{ role: 'user', content: 'Hello there' }] });
    const big = await client.messages.countTokens({ model: 'family-4.6', messages: [{ role: 'user', content: 'Hello there '.repeat(100) }] });
    assert.ok(small.input_tokens > 0 && big.input_tokens > small.input_tokens * 20, `${small.input_tokens} / ${big.input_tokens}`);
    const prefixed = new Anthropic({ baseURL: `${gw.url}/claude-proxy`, apiKey: 'k', maxRetries: 0 });
    assert.deepEqual(await prefixed.messages.countTokens({ model: 'family-4.6', messages: [{ role: 'user', content: 'Hello there' }] }), small);
  });

  it('serves the prefix mirror and translates dashed model names with the [1m] marker', async () => {
    const prefixed = new Anthropic({ baseURL: `${gw.url}/claude-proxy`, apiKey: 'k', maxRetries: 0 });
    upstream.enqueue({ kind: 'json', content: 'via prefix' });
    const message = await prefixed.messages.create({ model: 'family-4-6[1m]', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(message.content, [{ type: 'text', text: 'via prefix' }]);
    assert.equal(message.model, 'family-4-6[1m]');
    assert.equal(wire().model, 'family-4.6');
  });

  it('answers errors in the messages shape with the SDK error class of the status', async () => {
    await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.NotFoundError && (err.error as { error: { type: string } }).error.type === 'not_found_error');
    await assert.rejects(client.messages.create({ model: 'family-4.6', messages: [{ role: 'user', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming),
      (err: unknown) => err instanceof Anthropic.BadRequestError && /max_tokens/.test(err.message) && (err.error as { type: string }).type === 'error');
    upstream.enqueue({ kind: 'status', status: 429, retryAfter: 3 });
    await assert.rejects(client.messages.create({ model: 'family-4.6', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.RateLimitError && (err.error as { error: { type: string } }).error.type === 'rate_limit_error');
    upstream.enqueue({ kind: 'status', status: 500 });
    await assert.rejects(client.messages.create({ model: 'family-4.6', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.InternalServerError && (err.error as { error: { type: string } }).error.type === 'api_error');
  });

  it('never falls back: a failing first route is the answer, the other route is not tried', async () => {
    const before = upstream.chatRequests().length + second.chatRequests().length;
    upstream.setDefault({ kind: 'status', status: 503 });
    second.setDefault({ kind: 'status', status: 503 });
    try {
      await assert.rejects(client.messages.create({ model: 'two-routes', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }), Anthropic.InternalServerError);
      assert.equal(upstream.chatRequests().length + second.chatRequests().length, before + 1);
    } finally {
      upstream.setDefault(undefined);
      second.setDefault(undefined);
    }
  });

  it('ends a stream that fails after its first byte with an error event', async () => {
    upstream.enqueue({ kind: 'reset_mid_stream', afterChunks: 2 });
    const stream = await client.messages.create({ model: 'family-4.6', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] });
    const types: string[] = [];
    await assert.rejects((async () => { for await (const event of stream) types.push(event.type); })(), (err: unknown) => err instanceof Anthropic.APIError && /Upstream stream failed/.test(err.message));
    assert.equal(types[0], 'message_start');
  });
});
