/**
 * The messages surface over a messages-API upstream: the official `@anthropic-ai/sdk` client,
 * unchanged, against the gateway's `/v1/messages` for a model whose route is `vendor_h_direct`
 * (a fake messages-API server on 127.0.0.1). The request goes upstream as sent (the pass-through;
 * Claude Code's whole request shape: `messages-surface-passthrough.test.ts`); `count_tokens` is forwarded to the upstream's own counter, and answered with the
 * local estimate when that upstream fails.
 */
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeMessagesUpstream, type FakeMessagesUpstream } from '../support/fake-messages-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { closeAll } from '../support/fake-upstream';

describe('messages surface over a messages-API route (vendor_h_direct)', function () {
  this.timeout(30_000);
  let upstream: FakeMessagesUpstream;
  let gw: TestGateway;
  let client: Anthropic;

  before(async () => {
    upstream = await startFakeMessagesUpstream();
    gw = await startTestGateway({
      modelsYaml: `models:
  - { id: family-4.6, name: Family, provider: vendor_h_direct, base_url: "${upstream.origin}", api_key: upstream-secret-key, provider_model_id: vendor-family-4-6, max_output_length: 1000, supports_tools: true }
`,
    });
    client = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
  });
  after(async () => {
    await closeAll(gw);
    await upstream.close();
  });

  it('creates a message through the messages-API route: text and tool_use come back, cache usage kept', async () => {
    upstream.enqueue({
      kind: 'message', stopReason: 'tool_use',
      content: [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } }],
      usage: { input_tokens: 7, output_tokens: 4, cache_read_input_tokens: 5 },
    });
    const message = await client.messages.create({
      model: 'family-4-6', max_tokens: 100,
      tools: [{ name: 'bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }],
      messages: [{ role: 'user', content: 'List the files' }],
    });
    assert.deepEqual(message.content, [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } }]);
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(message.usage.input_tokens, 7);
    assert.equal(message.usage.cache_read_input_tokens, 5);
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'upstream-secret-key');
    assert.equal(sent.body.model, 'vendor-family-4-6');
    assert.deepEqual(sent.body.messages, [{ role: 'user', content: 'List the files' }], 'the client\'s messages as sent');
  });

  it('streams through the messages-API route', async () => {
    upstream.enqueue({ kind: 'message', content: [{ type: 'text', text: 'streamed answer' }] });
    const stream = client.messages.stream({ model: 'family-4.6', max_tokens: 50, messages: [{ role: 'user', content: 'Go' }] });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    const final = await stream.finalMessage();
    assert.equal(text, 'streamed answer');
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(upstream.requests.at(-1)!.body.stream, true);
  });

  it('forwards count_tokens to the upstream\'s counter with the route\'s model id', async () => {
    upstream.enqueue({ kind: 'count', inputTokens: 4321 });
    const counted = await client.messages.countTokens({ model: 'family-4-6', system: 'Be brief.', messages: [{ role: 'user', content: 'How many?' }] });
    assert.equal(counted.input_tokens, 4321);
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages/count_tokens');
    assert.equal(sent.body.model, 'vendor-family-4-6');
    assert.equal(sent.body.system, 'Be brief.');
    assert.equal(sent.body.max_tokens, undefined);
  });

  it('answers the local estimate when the upstream cannot count, and logs why', async () => {
    upstream.enqueue({ kind: 'status', status: 500, type: 'api_error', message: 'counter down' });
    const counted = await client.messages.countTokens({ model: 'family-4.6', messages: [{ role: 'user', content: 'How many tokens is this sentence?' }] });
    assert.ok(counted.input_tokens > 0 && counted.input_tokens < 100, `an estimate, got ${counted.input_tokens}`);
    assert.ok(gw.logs.lines.some((l) => l.event === 'count_tokens_upstream_failed'), 'the failure is logged');
    assert.equal(gw.logs.lines.some((l) => JSON.stringify(l).includes('upstream-secret-key')), false, 'the key never appears in a log line');
  });
});
