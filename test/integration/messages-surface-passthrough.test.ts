/**
 * A request shaped as Claude Code 2.1 sends it (recorded: `POST /v1/messages?beta=true`, an
 * `anthropic-beta` header, `system` blocks with `cache_control`, a system turn inside `messages`,
 * adaptive `thinking`, `context_management`, `output_config`, a deferred tool and a server tool,
 * `metadata.user_id`, `max_tokens` 128000) through the messages surface: forwarded intact to a
 * messages-API route (`vendor_h_direct`), translated by the documented rules for a chat route.
 * Also the non-streaming retry after a cut stream, `count_tokens` with the same shape, and the
 * errors a coding client must not misread (docs/inference-surfaces.md "Messages surface").
 */
import assert from 'node:assert/strict';
import { startFakeMessagesUpstream, type FakeMessagesUpstream } from '../support/fake-messages-upstream';
import { closeAll, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

const BETA = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20';
const CACHE = { cache_control: { type: 'ephemeral' } };

/** Claude Code's request body (trimmed texts, same fields), for a conversation after one tool call. */
function claudeCodeBody(model: string, stream: boolean, maxTokens = 128000): Record<string, unknown> {
  return {
    model,
    system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332;' }, { type: 'text', text: 'You are a Claude agent.', ...CACHE }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>attribution</system-reminder>' }, { type: 'text', text: 'Create hello.txt saying hi' }] },
      { role: 'system', content: '# Environment\n - Primary working directory: /tmp/w' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'I will write it.', signature: 'sig-abc' }, { type: 'tool_use', id: 'toolu_01', name: 'Write', input: { file_path: '/tmp/w/hello.txt', content: 'hi\n' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'File created successfully', ...CACHE }] },
    ],
    tools: [
      { name: 'Write', description: 'Writes a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } }, required: ['file_path', 'content'] } },
      { name: 'DeferredToolPlaceholder', description: 'never call', input_schema: { type: 'object', properties: {} }, defer_loading: true },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
    ],
    metadata: { user_id: '{"device_id":"d1","account_uuid":"","session_id":"s1"}' },
    max_tokens: maxTokens,
    thinking: { type: 'adaptive', display: 'updates' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'medium' },
    stream,
  };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'client-key', 'anthropic-version': '2023-06-01', 'anthropic-beta': BETA, ...headers }, body: JSON.stringify(body) });
}

/** `event:` / `data:` pairs of an SSE body. */
function events(text: string): Array<{ event: string | undefined; data: Record<string, unknown> }> {
  return text.split('\n\n').filter((f) => f.trim() !== '').map((frame) => {
    const event = /^event: (.*)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1] ?? '{}';
    return { event, data: JSON.parse(data) as Record<string, unknown> };
  });
}

describe('messages surface: Claude Code\'s request on a messages-API route (pass-through)', function () {
  this.timeout(30_000);
  let upstream: FakeMessagesUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startFakeMessagesUpstream();
    gw = await startTestGateway({
      modelsYaml: `models:
  - { id: claude-opus-5.5, name: Opus, provider: vendor_h_direct, base_url: "${upstream.origin}", api_key: upstream-secret-key, provider_model_id: vendor-opus, max_output_length: 64000, supports_tools: true }
`,
    });
  });
  after(async () => {
    await closeAll(gw);
    await upstream.close();
  });

  it('forwards the body intact (model, stream, max_tokens clamped set by the gateway) with anthropic-beta, and returns the message as sent', async () => {
    upstream.enqueue({ kind: 'message', content: [{ type: 'thinking', thinking: 'done', signature: 'sig-xyz' }, { type: 'text', text: 'Created.' }], usage: { input_tokens: 30, output_tokens: 4, cache_read_input_tokens: 20, cache_creation_input_tokens: 7 } });
    const res = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-opus-5-5', false));
    assert.equal(res.status, 200);
    const message = await res.json() as Record<string, unknown>;
    assert.deepEqual(message.content, [{ type: 'thinking', thinking: 'done', signature: 'sig-xyz' }, { type: 'text', text: 'Created.' }], 'signed thinking comes back intact');
    assert.equal(message.model, 'claude-opus-5-5', 'the name the client sent');
    assert.deepEqual(message.usage, { input_tokens: 30, output_tokens: 4, cache_read_input_tokens: 20, cache_creation_input_tokens: 7 });
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['anthropic-beta'], BETA);
    assert.equal(sent.headers['x-api-key'], 'upstream-secret-key', 'the route\'s key, never the client\'s');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    const { model, max_tokens: max, stream, ...rest } = sent.body;
    const { model: _m, max_tokens: _x, stream: _s, ...asSent } = claudeCodeBody('x', false);
    assert.deepEqual(rest, asSent, 'every other field as the client sent it');
    assert.equal(model, 'vendor-opus');
    assert.equal(max, 64000, 'clamped to max_output_length');
    assert.equal(stream, false);
  });

  it('streams the upstream\'s events as sent (model renamed in message_start), with any query string on the path', async () => {
    upstream.enqueue({ kind: 'message', stopReason: 'tool_use', content: [{ type: 'thinking', thinking: 'plan', signature: 'sig-stream' }, { type: 'tool_use', id: 'toolu_9', name: 'Write', input: { file_path: '/tmp/a', content: 'x' } }] });
    const res = await post(`${gw.url}/anthropic/v1/messages?beta=true&x=1`, claudeCodeBody('claude-opus-5-5[1m]', true));
    assert.equal(res.status, 200);
    const got = events(await res.text());
    assert.deepEqual(got.map((e) => e.event), [
      'message_start', 'ping',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'message_delta', 'message_stop',
    ]);
    assert.equal((got[0]!.data.message as { model: string }).model, 'claude-opus-5-5[1m]');
    assert.deepEqual(got[4]!.data.delta, { type: 'signature_delta', signature: 'sig-stream' });
    assert.deepEqual((got[6]!.data.content_block as { name: string }).name, 'Write');
    assert.equal(upstream.requests.at(-1)!.body.stream, true);
  });

  it('a cut stream ends with an error event; the non-streaming retry Claude Code then makes is served', async () => {
    upstream.enqueue({ kind: 'stream_cut', text: 'partial' }, { kind: 'message', content: [{ type: 'text', text: 'whole' }] });
    const cut = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-opus-5-5', true));
    const got = events(await cut.text());
    assert.equal(got.at(-1)!.event, 'error');
    assert.match((got.at(-1)!.data.error as { message: string }).message, /ended before message_stop/);
    const retry = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-opus-5-5', false, 64000));
    assert.equal(retry.status, 200);
    assert.deepEqual((await retry.json() as { content: unknown }).content, [{ type: 'text', text: 'whole' }]);
  });

  it('count_tokens forwards the same shape with anthropic-beta, any query string', async () => {
    upstream.enqueue({ kind: 'count', inputTokens: 777 });
    const { max_tokens: _x, stream: _s, ...body } = claudeCodeBody('claude-opus-5-5', false);
    const res = await post(`${gw.url}/v1/messages/count_tokens?beta=true`, body);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { input_tokens: 777 });
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages/count_tokens');
    assert.equal(sent.headers['anthropic-beta'], BETA);
    assert.deepEqual(sent.body.tools, body.tools);
  });

  it('an upstream 404 is a 502 api_error, never the client\'s model not found', async () => {
    upstream.enqueue({ kind: 'status', status: 404, type: 'not_found_error', message: 'model: vendor-opus' });
    const res = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-opus-5-5', false));
    assert.equal(res.status, 502);
    const body = await res.json() as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'api_error');
    assert.match(body.error.message, /upstream answered 404/);
  });

  it('an unknown model is a 404 not_found_error naming the name sent and the id looked up', async () => {
    const res = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-sonnet-9-1', true));
    assert.equal(res.status, 404);
    const body = await res.json() as { type: string; error: { type: string; message: string } };
    assert.deepEqual(body, { type: 'error', error: { type: 'not_found_error', message: "The model 'claude-sonnet-9-1' (looked up as 'claude-sonnet-9.1') does not exist on this gateway or your key cannot use it" } });
  });
});

describe('messages surface: Claude Code\'s request on a chat-completions route (translated)', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startFakeUpstream();
    gw = await startTestGateway({
      modelsYaml: `models:
  - { id: claude-opus-5.5, name: Opus, provider: generic_compat, base_url: "${upstream.url}", api_key: up, provider_model_id: chat-model, max_output_length: 64000, supports_tools: true, supported_params: [max_tokens, user] }
`,
    });
  });
  after(async () => {
    await closeAll(gw);
    await upstream.close();
  });

  it('translates by the documented rules: system turn in place, thinking dropped, deferred and server tools left out, beta not sent', async () => {
    upstream.enqueue({ kind: 'json', content: 'Created.' });
    const res = await post(`${gw.url}/v1/messages?beta=true`, claudeCodeBody('claude-opus-5-5', false));
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json() as { content: unknown }).content, [{ type: 'text', text: 'Created.' }]);
    const sent = upstream.chatRequests().at(-1)!;
    assert.equal(sent.headers['anthropic-beta'], undefined);
    const body = sent.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['max_tokens', 'messages', 'model', 'stream', 'tools', 'user']);
    assert.equal(body.max_tokens, 64000);
    assert.equal(body.user, '{"device_id":"d1","account_uuid":"","session_id":"s1"}');
    assert.deepEqual((body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name), ['Write']);
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'x-anthropic-billing-header: cc_version=2.1.332;\n\nYou are a Claude agent.' },
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>attribution</system-reminder>' }, { type: 'text', text: 'Create hello.txt saying hi' }] },
      { role: 'system', content: '# Environment\n - Primary working directory: /tmp/w' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'Write', arguments: '{"file_path":"/tmp/w/hello.txt","content":"hi\\n"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_01', content: 'File created successfully' },
    ]);
  });

  it('a block with no chat translation is a 400 naming it (a messages-API route would have taken it)', async () => {
    const body = claudeCodeBody('claude-opus-5-5', false);
    (body.messages as unknown[]).push({ role: 'assistant', content: 'ok' }, { role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' } }] });
    const before = upstream.chatRequests().length;
    const res = await post(`${gw.url}/v1/messages?beta=true`, body);
    assert.equal(res.status, 400);
    const error = await res.json() as { error: { type: string; message: string } };
    assert.equal(error.error.type, 'invalid_request_error');
    assert.match(error.error.message, /messages\[5\]\.content\[0\]\.type/);
    assert.equal(upstream.chatRequests().length, before, 'nothing sent');
  });
});
