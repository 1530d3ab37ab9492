/**
 * The messages surface on a message-format route (docs/adapters.md "Messages surface on a
 * message-format route"): the upstream body is the client's with only `model`, `stream` and a
 * clamped `max_tokens` set; the answer comes back as sent with the client's model name; the stream
 * relay keeps every event's data (fed whole and byte by byte), reads usage, and reports a stream
 * cut short.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveAdapterKind } from '../../../gateway/adapters';
import type { WireRoute } from '../../../gateway/adapters/wire-body';
import type { Route } from '../../../gateway/registry';
import { passthroughBody, passthroughMessage } from '../../../gateway/translate/messages-upstream/passthrough';
import { PassthroughStreamRelay } from '../../../gateway/translate/messages-upstream/passthrough-stream';

const TOOLS = readFileSync(join(__dirname, '../../fixtures/messages-upstream/stream-tools.sse'));
const DIRECT = resolveAdapterKind('vendor_h_direct').messages!;
const CLOUD = resolveAdapterKind('vendor_h_cloud').messages!;
const route: WireRoute = { kind: 'vendor_h_direct', providerModelId: 'up-model', maxOutputLength: 32000, supportsTools: true, priorityScheduling: false };

const client = {
  model: 'claude-opus-5-5', max_tokens: 128000, stream: true, anthropic_version: 'client-version',
  system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }],
  messages: [{ role: 'user', content: 'hi' }, { role: 'system', content: 'env' }],
  thinking: { type: 'enabled', budget_tokens: 64000 }, context_management: { edits: [] }, output_config: { effort: 'high' },
  tools: [{ name: 'T', input_schema: {}, defer_loading: true }, { type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'auto' },
  metadata: { user_id: 'u' }, temperature: 1, top_k: 3, some_future_field: { x: 1 },
};

describe('messages surface pass-through: body', () => {
  it('keeps every client field; sets model, stream and a clamped max_tokens; fits a thinking budget under it', () => {
    const body = passthroughBody(route, client, false, DIRECT);
    const { model, max_tokens: max, stream, thinking, anthropic_version: version, ...rest } = client;
    assert.deepEqual(body, { ...rest, model: 'up-model', max_tokens: 32000, stream: false, thinking: { type: 'enabled', budget_tokens: 31999 } });
    assert.equal(client.max_tokens, 128000, 'the client object is untouched');
    assert.deepEqual(client.thinking, { type: 'enabled', budget_tokens: 64000 });
    void [model, max, stream, thinking, version];
  });

  it('leaves thinking out when the clamped max_tokens leaves no 1024-token budget; adaptive passes', () => {
    assert.equal(passthroughBody({ ...route, maxOutputLength: 1000 }, client, true, DIRECT).thinking, undefined);
    assert.deepEqual(passthroughBody(route, { ...client, thinking: { type: 'adaptive' } }, true, DIRECT).thinking, { type: 'adaptive' });
    assert.equal(passthroughBody(route, { ...client, max_tokens: 100 }, true, DIRECT).max_tokens, 100);
  });

  it('extra_body goes under the client\'s fields; tools only on supports_tools routes; the cloud variant has no model but its version', () => {
    const body = passthroughBody({ ...route, supportsTools: false, extraBody: { top_k: 50, service_tier: 'auto' } }, client, true, CLOUD);
    assert.equal(body.top_k, 3);
    assert.equal(body.service_tier, 'auto');
    assert.equal(body.tools, undefined);
    assert.equal(body.tool_choice, undefined);
    assert.equal(body.model, undefined);
    assert.equal(body.anthropic_version, 'vertex-2023-10-16');
  });

  it('returns the message as sent with the client\'s model name, usage in chat terms', () => {
    const upstream = { id: 'msg_1', type: 'message', model: 'up-model', content: [{ type: 'thinking', thinking: 't', signature: 'sig' }], container: null, usage: { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 5, cache_creation_input_tokens: 1 } };
    const { body, usage } = passthroughMessage(upstream, 'claude-opus-5-5');
    assert.deepEqual(body, { ...upstream, model: 'claude-opus-5-5' });
    assert.equal(usage?.prompt_tokens, 9);
    assert.equal(usage?.completion_tokens, 2);
    assert.equal(usage?.cache_creation_input_tokens, 1);
  });
});

const ROUTE = { processor: 'default', nullCacheDetailsMeansMiss: false } as unknown as Route;

function relayOf(pieces: Buffer[]): { text: string; relay: PassthroughStreamRelay } {
  let text = '';
  const res = { write: (chunk: string | Buffer) => { text += chunk.toString(); return true; }, writableNeedDrain: false, destroyed: false };
  const relay = new PassthroughStreamRelay(res, ROUTE, 'client-name');
  for (const piece of pieces) relay.push(piece);
  relay.end();
  return { text, relay };
}

function frames(text: string): Array<[string | undefined, string]> {
  return text.split('\n\n').filter((f) => f.trim() !== '').map((f) => [/^event: (.*)$/m.exec(f)?.[1], /^data: (.*)$/m.exec(f)![1]!]);
}

describe('messages surface pass-through: stream relay', () => {
  it('relays every event\'s data as sent (message_start renamed), whole or byte by byte, and reads usage', () => {
    const renamed = (data: string): string => {
      const start = JSON.parse(data) as { message: Record<string, unknown> };
      return JSON.stringify({ ...start, message: { ...start.message, model: 'client-name' } });
    };
    const expected = frames(TOOLS.toString()).map(([event, data]) => [event, event === 'message_start' ? renamed(data) : data]);
    for (const pieces of [[TOOLS], [...TOOLS].map((b) => Buffer.from([b]))]) {
      const { text, relay } = relayOf(pieces);
      assert.deepEqual(frames(text), expected);
      assert.equal(relay.incomplete, undefined);
      assert.equal(relay.usage?.cache_read_input_tokens, 2048);
      assert.equal(relay.usage?.prompt_tokens, 472 + 100 + 2048);
      assert.equal(relay.usage?.completion_tokens, 89, 'message_delta\'s count replaces message_start\'s');
    }
  });

  it('a stream without message_stop ends with an error event and is reported incomplete; an error event is relayed', () => {
    const cut = TOOLS.subarray(0, TOOLS.indexOf('event: message_delta'));
    const { text, relay } = relayOf([cut]);
    const last = frames(text).at(-1)!;
    assert.equal(last[0], 'error');
    assert.match(last[1], /ended before message_stop/);
    assert.match(relay.incomplete!, /message_stop/);
    const failed = relayOf([Buffer.from('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n')]);
    assert.deepEqual(frames(failed.text), [['error', '{"type":"error","error":{"type":"overloaded_error","message":"busy"}}']]);
    assert.match(failed.relay.incomplete!, /overloaded_error/);
  });
});
