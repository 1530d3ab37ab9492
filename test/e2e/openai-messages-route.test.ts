/**
 * The official `openai` client, unchanged, against `/v1/chat/completions` served by message-format
 * routes (a fake messages-API upstream on loopback): create, stream, a tools round trip, an image,
 * cache usage, upstream 529/429/500 as the client sees them, fallback and breaker before any byte,
 * a mid-stream `error` event, the URL and headers each kind sends, token counting, keys never logged.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ClientAbort } from '../../lib/http/client-abort';
import { countTokensUpstream } from '../../gateway/translate/messages-upstream/count-tokens';
import { startFakeMessagesUpstream, type FakeMessagesUpstream } from '../support/fake-messages-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const KEYS = ['sk-direct-secret-1', 'sk-direct-secret-2', 'g-secret-key', 'cloud-secret-token', 'fallback-secret'];
const PARAMS = 'supported_params: [temperature, max_tokens, tools, tool_choice, stop, user], supports_tools: true, input_modalities: [text, image]';

describe('e2e: openai client against message-format routes', function () {
  this.timeout(30_000);
  let up: FakeMessagesUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  const last = () => up.requests.at(-1)!;

  before(async () => {
    up = await startFakeMessagesUpstream();
    gw = await startTestGateway({
      rng: () => 0,
      modelsYaml: `models:
  - id: h-direct
    name: H direct
    route: [{ kind: vendor_h_direct, base_url: "${up.origin}", api_keys: [${KEYS[0]}, ${KEYS[1]}], provider_model_id: h-model-1, max_output_length: 2048, ${PARAMS} }]
  - id: g-api
    name: G
    route: [{ kind: vendor_g_api, base_url: "${up.origin}/g/v1/", api_key: ${KEYS[2]}, provider_model_id: g-model }]
  - id: h-cloud
    name: H cloud
    route: [{ kind: vendor_h_cloud, base_url: "${up.origin}/v1/projects/p/locations/r/publishers/h", api_key: ${KEYS[3]}, provider_model_id: "h-model@2025" }]
  - id: h-fallback
    name: H with fallback
    route:
      - { kind: vendor_h_direct, base_url: "${up.origin}/first", api_key: ${KEYS[4]}, provider: first }
      - { kind: vendor_h_direct, base_url: "${up.origin}/second", api_key: ${KEYS[4]}, provider: second }
`,
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  it('creates a completion: messages-API request out (URL, headers, key pool), chat completion back with cache usage', async () => {
    up.enqueue({ kind: 'message', content: [{ type: 'text', text: 'Bonjour' }], usage: { input_tokens: 30, output_tokens: 4, cache_read_input_tokens: 900, cache_creation_input_tokens: 70 } });
    const completion = await client.chat.completions.create({
      model: 'h-direct', max_tokens: 99999, temperature: 0.3, stop: ['\n\n'], user: 'u1',
      messages: [{ role: 'system', content: 'Speak French.' }, { role: 'user', content: 'Hello' }],
    });
    assert.equal(completion.choices[0]?.message.content, 'Bonjour');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    assert.equal(completion.usage?.prompt_tokens, 1000);
    assert.equal(completion.usage?.completion_tokens, 4);
    assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 900);
    assert.equal((completion.usage as unknown as { cache_read_tokens: number }).cache_read_tokens, 900);
    const sent = last();
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], KEYS[0]);
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers.authorization, undefined);
    assert.deepEqual(sent.body, {
      model: 'h-model-1', system: 'Speak French.', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      max_tokens: 2048, temperature: 0.3, stop_sequences: ['\n\n'], metadata: { user_id: 'u1' }, stream: false,
    });
    await client.chat.completions.create({ model: 'h-direct', messages: [{ role: 'user', content: 'again' }] });
    assert.equal(last().headers['x-api-key'], KEYS[1], 'the key pool rotates');
  });

  it('streams text with the role chunk, finish_reason and the usage chunk', async () => {
    up.enqueue({ kind: 'message', content: [{ type: 'text', text: 'one two three four' }], usage: { input_tokens: 8, output_tokens: 6, cache_read_input_tokens: 16 } });
    const stream = await client.chat.completions.create({ model: 'h-direct', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Count' }] });
    let text = '';
    let role: string | undefined;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      role ??= chunk.choices[0]?.delta.role;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual([role, text, finish], ['assistant', 'one two three four', 'stop']);
    assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens, usage?.prompt_tokens_details?.cached_tokens], [24, 6, 16]);
    assert.equal(last().body.stream, true);
  });

  it('runs a tools round trip, streamed and not', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const call = { type: 'tool_use' as const, id: 'toolu_9', name: 'get_weather', input: { city: 'Paris' } };
    up.enqueue({ kind: 'message', content: [{ type: 'thinking', thinking: 'need weather' }, call], stopReason: 'tool_use' });
    const first = await client.chat.completions.create({ model: 'h-direct', tools, tool_choice: 'auto', messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    const toolCall = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(toolCall?.type === 'function');
    assert.deepEqual([toolCall.id, toolCall.function.name, JSON.parse(toolCall.function.arguments)], ['toolu_9', 'get_weather', { city: 'Paris' }]);
    assert.equal((first.choices[0]?.message as { reasoning_content?: string }).reasoning_content, 'need weather');
    assert.deepEqual(last().body.tools, [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]);
    assert.deepEqual(last().body.tool_choice, { type: 'auto' });

    up.enqueue({ kind: 'message', content: [call], stopReason: 'tool_use' });
    const streamed = await client.chat.completions.stream({
      model: 'h-direct', tools, stream: true,
      messages: [{ role: 'user', content: 'Weather in Paris?' }, first.choices[0].message, { role: 'tool', tool_call_id: 'toolu_9', content: '21°C' }],
    }).finalChatCompletion();
    const again = streamed.choices[0]?.message.tool_calls?.[0];
    assert.ok(again?.type === 'function');
    assert.deepEqual([again.id, again.function.name, JSON.parse(again.function.arguments)], ['toolu_9', 'get_weather', { city: 'Paris' }]);
    assert.deepEqual(last().body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '21°C' }] },
    ]);
  });

  it('sends an image as a base64 block', async () => {
    await client.chat.completions.create({ model: 'h-direct', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }] });
    assert.deepEqual((last().body.messages as Array<{ content: unknown[] }>)[0]?.content[1], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } });
  });

  it('maps upstream 429, 529 and 500 to the client as a chat upstream\'s would be', async () => {
    up.enqueue({ kind: 'status', status: 429, type: 'rate_limit_error', message: 'slow down', retryAfter: 7 });
    await assert.rejects(client.chat.completions.create({ model: 'h-direct', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal(err.headers?.get('retry-after'), '7');
      return true;
    });
    for (const [status, type] of [[529, 'overloaded_error'], [500, 'api_error']] as const) {
      up.enqueue({ kind: 'status', status, type, message: `${type} happened` });
      await assert.rejects(client.chat.completions.create({ model: 'h-direct', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 502);
        assert.match(err.message, new RegExp(`${type} happened`));
        return true;
      });
    }
  });

  it('falls back to the second route on a 529 before any byte, and the breaker hears it', async () => {
    const [firstRoute] = gw.deps.registry.resolve('h-fallback', 'admin', 'chat').routes;
    const before = gw.deps.routing.breakers.snapshot(firstRoute!.endpointId).consecutive_failures;
    up.enqueue({ kind: 'status', status: 529, type: 'overloaded_error' }, { kind: 'message', content: [{ type: 'text', text: 'from second' }] });
    const completion = await client.chat.completions.create({ model: 'h-fallback', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(completion.choices[0]?.message.content, 'from second');
    assert.deepEqual(up.requests.slice(-2).map((r) => r.path), ['/first/v1/messages', '/second/v1/messages']);
    assert.equal(gw.deps.routing.breakers.snapshot(firstRoute!.endpointId).consecutive_failures, before + 1);
    up.enqueue({ kind: 'stream_error', type: 'overloaded_error' }, { kind: 'message', content: [{ type: 'text', text: 'streamed second' }] });
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'h-fallback', stream: true, messages: [{ role: 'user', content: 'x' }] })) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'streamed second', 'an error event before the first chat chunk still falls back');
  });

  it('turns an error event after the first chunk into the gateway\'s mid-stream failure', async () => {
    up.enqueue({ kind: 'stream_error', text: 'partial', type: 'overloaded_error', message: 'Overloaded' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'h-fallback', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(res.status, 200);
    const body = await res.text();
    assert.match(body, /"content":"partial"/);
    assert.match(body, /data: \{"error":\{"message":"Upstream stream failed: overloaded_error: Overloaded"/);
    assert.doesNotMatch(body, /\[DONE\]/);
    assert.equal(up.requests.at(-1)?.path, '/first/v1/messages', 'no fallback after the first byte');
  });

  it('sends each kind\'s URL and auth: vendor_g_api bearer, vendor_h_cloud rawPredict with the version in the body', async () => {
    await client.chat.completions.create({ model: 'g-api', messages: [{ role: 'user', content: 'x' }] });
    assert.deepEqual([last().path, last().headers.authorization, last().headers['anthropic-version'], last().body.model], ['/g/v1/messages', `Bearer ${KEYS[2]}`, '2023-06-01', 'g-model']);
    await client.chat.completions.create({ model: 'h-cloud', messages: [{ role: 'user', content: 'x' }] });
    const cloud = '/v1/projects/p/locations/r/publishers/h/models/h-model@2025';
    assert.deepEqual([last().path, last().headers.authorization, last().headers['x-api-key'], last().body.anthropic_version, 'model' in last().body],
      [`${cloud}:rawPredict`, `Bearer ${KEYS[3]}`, undefined, 'vertex-2023-10-16', false]);
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'h-cloud', stream: true, messages: [{ role: 'user', content: 'x' }] })) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'hello from messages');
    assert.equal(last().path, `${cloud}:streamRawPredict`);
  });

  it('forwards count_tokens to each kind\'s counting endpoint', async () => {
    const signal = new ClientAbort();
    const body = { model: 'h-direct', max_tokens: 10, messages: [{ role: 'user', content: 'count me' }] };
    for (const [id, path] of [['h-direct', '/v1/messages/count_tokens'], ['h-cloud', '/v1/projects/p/locations/r/publishers/h/models/count-tokens:rawPredict']] as const) {
      const route = gw.deps.registry.resolve(id, 'admin', 'chat').routes[0]!;
      up.enqueue({ kind: 'count', inputTokens: 17 });
      assert.equal(await countTokensUpstream(gw.deps.upstream, route, body, signal), 17);
      assert.equal(last().path, path);
      assert.deepEqual(last().body.messages, body.messages);
      assert.equal('max_tokens' in last().body, false);
    }
    up.enqueue({ kind: 'status', status: 500, type: 'api_error' });
    const route = gw.deps.registry.resolve('h-direct', 'admin', 'chat').routes[0]!;
    await assert.rejects(countTokensUpstream(gw.deps.upstream, route, body, signal)!, { name: 'UpstreamError' });
  });

  it('serves /v1/responses and /v1/completions through the same translation, streaming and not', async () => {
    up.enqueue({ kind: 'message', content: [{ type: 'text', text: 'responded' }], usage: { input_tokens: 3, output_tokens: 1, cache_read_input_tokens: 5 } });
    const response = await client.responses.create({ model: 'h-direct', instructions: 'Be brief.', input: 'Hi' });
    assert.equal(response.output_text, 'responded');
    assert.equal(response.usage?.input_tokens_details.cached_tokens, 5);
    assert.equal(last().body.system, 'Be brief.');
    let text = '';
    for await (const event of await client.responses.create({ model: 'h-direct', input: 'Hi', stream: true })) if (event.type === 'response.output_text.delta') text += event.delta;
    assert.equal(text, 'hello from messages');
    let completed = '';
    for await (const chunk of await client.completions.create({ model: 'h-direct', prompt: 'Say', stream: true })) completed += chunk.choices[0]?.text ?? '';
    assert.equal(completed, 'hello from messages');
  });

  it('never logs a route key', () => {
    const logged = JSON.stringify(gw.logs.lines);
    for (const key of KEYS) assert.equal(logged.includes(key), false, key);
    assert.ok(gw.logs.lines.length > 0);
  });
});
