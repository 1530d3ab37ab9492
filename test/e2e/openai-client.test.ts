/**
 * The official `openai` npm client against the gateway (and fake upstreams behind it): chat
 * (stream and not), embeddings, the model list and error statuses as the client classifies them.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

describe('e2e: official openai client', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      modelsYaml: `models:
  - { id: chat-model, name: Chat, provider: generic_compat, base_url: "${upstream.url}", api_key: up-key, aliases: [chat-alias], supported_params: [temperature, max_tokens, tools, tool_choice], supports_tools: true }
  - { id: embed-model, name: Embed, model_type: embedding, provider: generic_compat, base_url: "${upstream.url}" }
  - id: parked
    name: Parked
    route: [{ kind: generic_compat, base_url: "${upstream.url}", weight: 0 }]
`,
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  it('creates a chat completion through an alias', async () => {
    upstream.enqueue({ kind: 'json', content: 'hello client', usage: { prompt_tokens: 9, completion_tokens: 2, cached_tokens: 4 } });
    const completion = await client.chat.completions.create({ model: 'chat-alias', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.5 });
    assert.equal(completion.choices[0]?.message.content, 'hello client');
    assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 4);
    assert.equal((upstream.requests.at(-1)?.body as { model: string }).model, 'chat-model');
  });

  it('streams a chat completion with the final usage chunk', async () => {
    upstream.enqueue({ kind: 'sse', pieces: ['one ', 'two ', 'three'], usage: { prompt_tokens: 5, completion_tokens: 3, cached_tokens: 2 } });
    const stream = await client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Count' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let cached: number | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) cached = chunk.usage.prompt_tokens_details?.cached_tokens;
    }
    assert.equal(text, 'one two three');
    assert.equal(cached, 2);
  });

  it('returns tool calls', async () => {
    upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'ls' } });
    const completion = await client.chat.completions.create({
      model: 'chat-model', messages: [{ role: 'user', content: 'list files' }],
      tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }],
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    assert.equal(call?.type, 'function');
    assert.deepEqual(JSON.parse(call?.type === 'function' ? call.function.arguments : '{}'), { command: 'ls' });
  });

  it('creates embeddings', async () => {
    const result = await client.embeddings.create({ model: 'embed-model', input: ['a', 'b'], encoding_format: 'float' });
    assert.equal(result.data.length, 2);
    assert.ok(result.data.every((d) => Array.isArray(d.embedding) && d.embedding.length === 8));
    assert.equal(upstream.requests.at(-1)?.path, '/v1/embeddings');
  });

  it('lists models with ids and aliases', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.deepEqual(ids.sort(), ['chat-alias', 'chat-model', 'embed-model', 'parked']);
  });

  it('serves /v1/completions in the text_completion shape, streaming and not', async () => {
    upstream.enqueue({ kind: 'json', content: 'completed text' });
    const completion = await client.completions.create({ model: 'chat-model', prompt: 'Say something', max_tokens: 20 });
    assert.equal(completion.object, 'text_completion');
    assert.equal(completion.choices[0]?.text, 'completed text');
    assert.deepEqual((upstream.requests.at(-1)?.body as { messages: unknown }).messages, [{ role: 'user', content: 'Say something' }]);
    upstream.enqueue({ kind: 'sse', pieces: ['a', 'b', 'c'] });
    let text = '';
    for await (const chunk of await client.completions.create({ model: 'chat-model', prompt: 'x', stream: true })) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, 'abc');
  });

  it('serves /v1/responses: instructions and input items in, output items and output_text out', async () => {
    upstream.enqueue({ kind: 'json', content: 'response text', usage: { prompt_tokens: 7, completion_tokens: 2, cached_tokens: 3 } });
    const response = await client.responses.create({
      model: 'chat-model', instructions: 'Be brief.', max_output_tokens: 50,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
    });
    assert.equal(response.object, 'response');
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'response text');
    assert.equal(response.usage?.input_tokens_details.cached_tokens, 3);
    const wire = upstream.requests.at(-1)?.body as { messages: unknown; max_tokens: number };
    assert.deepEqual(wire.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'Hello' }] }]);
    assert.equal(wire.max_tokens, 50);
  });

  it('streams /v1/responses events and returns function calls', async () => {
    upstream.enqueue({ kind: 'sse', pieces: ['Hel', 'lo'] });
    const types: string[] = [];
    let text = '';
    for await (const event of await client.responses.create({ model: 'chat-model', input: 'Hi', stream: true })) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') assert.equal(event.response.output_text ?? text, 'Hello');
    }
    assert.equal(text, 'Hello');
    assert.deepEqual([types[0], types[1], types[2], types[3], types.at(-1)], ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.completed']);
    upstream.enqueue({ kind: 'tool_call', name: 'bash', arguments: { command: 'pwd' } });
    const withTool = await client.responses.create({
      model: 'chat-model', input: 'where am I', tools: [{ type: 'function', name: 'bash', parameters: { type: 'object', properties: {} }, strict: false }],
    });
    const call = withTool.output.find((o) => o.type === 'function_call');
    assert.equal(call?.type === 'function_call' ? call.name : undefined, 'bash');
    assert.deepEqual(JSON.parse(call?.type === 'function_call' ? call.arguments : '{}'), { command: 'pwd' });
  });

  it('maps error statuses to the client error classes', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'missing', messages: [{ role: 'user', content: 'x' }] }), OpenAI.NotFoundError);
    await assert.rejects(client.chat.completions.create({ model: 'embed-model', messages: [{ role: 'user', content: 'x' }] }), OpenAI.BadRequestError);
    await assert.rejects(client.chat.completions.create({ model: 'parked', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 503);
      return true;
    });
    upstream.enqueue({ kind: 'status', status: 429, retryAfter: 1 });
    await assert.rejects(client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }] }), OpenAI.RateLimitError);
    const secured = await startTestGateway({ env: { USER_AUTH_ENABLED: 'true' }, modelsYaml: `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}" }\n` });
    try {
      const anonymous = new OpenAI({ baseURL: `${secured.url}/v1`, apiKey: 'not-a-key', maxRetries: 0 });
      await assert.rejects(anonymous.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), OpenAI.AuthenticationError);
    } finally {
      await secured.close();
    }
  });
});
