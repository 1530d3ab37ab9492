/**
 * The request log's pure parts: cost from route pricing, the user-message shape (length, entropy,
 * hash), the declared agent, the conversation facts, and the row built from a queued entry.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { declaredAgent, leadingToken } from '../../gateway/request-log/client-agent';
import { noteChatFacts } from '../../gateway/request-log/chat-facts';
import { costOf } from '../../gateway/request-log/cost';
import type { RequestRecord } from '../../gateway/surfaces/request-record';
import { requestRecord, type RecordFields } from '../support/request-log-fakes';
import { messageShape, shannonEntropy } from '../../gateway/request-log/message-shape';
import { toApiLogRow } from '../../gateway/request-log/row';

function entry(overrides: RecordFields = {}): RequestRecord {
  return requestRecord({
    at: Date.UTC(2026, 10, 21, 12, 0, 0), requestId: 'req-1', path: '/v1/chat/completions', surface: undefined, status: 200,
    latencyMs: 12.6, firstTokenMs: undefined, errorCode: undefined, caller: { role: 'pro', via: 'api_key', userId: 7, apiKeyId: 9, keyPrefix: 'sk-abc' },
    model: 'm', stream: false, routing: { provider: 'route-a', base_url: 'http://u/v1', endpoint_id: 'ep-a' },
    usage: { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 }, cache_read_tokens: 400 },
    pricing: { prompt: '3', completion: '15', input_cache_reads: '0.3', request: '0.001' }, client: undefined,
    numUserTurns: 2, numToolCalls: 1, lastUserMessage: '  hello  ', userAgent: 'claude-cli/1.0.3 (external, cli)', sessionId: 's-1',
    synthetic: false, rejection: undefined, ...overrides,
  });
}

const AT = { at: Date.parse('2026-11-21T12:00:00Z') };

describe('request log: cost', () => {
  it('prices prompt, cached reads, completion and the per-request fee (USD per 1M tokens)', () => {
    // 600 uncached × 3 + 400 cached × 0.3 + 200 × 15 (per 1M) + 0.001
    const expected = (600 * 3 + 400 * 0.3 + 200 * 15) / 1e6 + 0.001;
    assert.equal(costOf({ prompt: '3', completion: '15', input_cache_reads: '0.3', request: '0.001' },
      { prompt_tokens: 1000, completion_tokens: 200, cache_read_tokens: 400 }, AT), Math.round(expected * 1e9) / 1e9);
  });

  it('charges cached tokens at the prompt rate when cache reads are not priced, reading any usage spelling', () => {
    assert.equal(costOf({ prompt: '2' }, { prompt_tokens: 1_000_000, cached_tokens: 500_000 }, AT), 2);
    assert.equal(costOf({ prompt: '2', input_cache_reads: '0' }, { prompt_tokens: 1_000_000, prompt_tokens_details: { cached_tokens: 500_000 } }, AT), 1);
  });

  it('is null without pricing or without any usable price; a request fee alone needs no usage', () => {
    assert.equal(costOf(undefined, { prompt_tokens: 10 }, AT), null);
    assert.equal(costOf({ prompt: 'free' }, { prompt_tokens: 10 }, AT), null);
    assert.equal(costOf({ request: '0.5' }, undefined, AT), 0.5);
  });
});

describe('request log: user-message shape and agent', () => {
  it('measures the stripped text in code points, its entropy and a 64-bit hash', () => {
    const shape = messageShape('  aabb  ')!;
    assert.equal(shape.chars, 4);
    assert.equal(shape.entropy, 1);
    assert.match(shape.hash!, /^[0-9a-f]{16}$/);
    assert.equal(messageShape('aabb')!.hash, shape.hash, 'the hash is of the stripped text');
    assert.notEqual(messageShape('aabc')!.hash, shape.hash);
    // The first 64 bits of the SHA-256 of the UTF-8 text, in hex: stored rows group by it, so it never changes.
    assert.equal(messageShape('aabb')!.hash, '486b34250bd4400c');
    assert.equal(messageShape('  héllo 🙂 ')!.hash, createHash('sha256').update('héllo 🙂', 'utf8').digest('hex').slice(0, 16));
    assert.equal(messageShape('🙂🙂')!.chars, 2);
    assert.equal(shannonEntropy('abcd'), 2);
    assert.equal(shannonEntropy('🙂🙂ab'), 1.5, 'astral characters count once each');
    assert.equal(shannonEntropy('aaaa'), 0);
    assert.equal(messageShape('a\ud800b')!.chars, 3, 'an unpaired surrogate is one character');
    assert.equal(shannonEntropy('abcd'), 2, 'counts are reset between calls');
  });

  it('reads the text parts of a parts array; no text gives no shape, blank text no hash', () => {
    assert.equal(messageShape([{ type: 'text', text: 'ab' }, { type: 'image_url', image_url: { url: 'x' } }, { type: 'text', text: 'cd' }])!.chars, 5);
    assert.equal(messageShape(null), undefined);
    assert.deepEqual(messageShape('   '), { chars: 0, entropy: 0, hash: null });
  });

  it('names a declared coding agent from the User-Agent leading token only', () => {
    assert.equal(leadingToken('claude-cli/1.0.3 (external, cli)'), 'claude-cli');
    assert.equal(declaredAgent('Aider/0.80'), 'aider');
    assert.equal(declaredAgent('OpenAI/Python 1.2.3'), undefined);
    assert.equal(declaredAgent('Mozilla/5.0 (X11)'), undefined);
    assert.equal(declaredAgent(undefined), undefined);
  });

  it('counts user turns and history tool calls and keeps the newest user message', () => {
    const state = requestRecord();
    noteChatFacts(state, [
      { role: 'system', content: 's' }, { role: 'user', content: 'first' },
      { role: 'assistant', content: null, tool_calls: [{ id: '1' }, { id: '2' }] }, { role: 'tool', content: 'r' },
      { role: 'user', content: 'second' },
    ]);
    assert.equal(state.numUserTurns, 2);
    assert.equal(state.numToolCalls, 2);
    assert.equal(state.lastUserMessage, 'second');
    assert.equal(state.images, 0);
    noteChatFacts(state, [
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'x' } }] },
      { role: 'assistant', content: [{ type: 'image_url', image_url: { url: 'not counted' } }] },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'y' } }, null] },
    ]);
    assert.equal(state.images, 2, 'image_url parts of user messages');
    assert.equal(state.audio, 0);
    noteChatFacts(state, [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }, { type: 'image_url', image_url: { url: 'y' } }] }]);
    assert.deepEqual([state.images, state.audio], [1, 1], 'input_audio parts counted apart from images');
  });
});

describe('request log: row', () => {
  it('maps an entry to its api_logs row', () => {
    const row = toApiLogRow(entry(), () => 'id-1');
    assert.equal(row.log_id, 'id-1');
    assert.equal(row.created_at, '2026-11-21T12:00:00.000Z');
    assert.deepEqual([row.user_id, row.api_key_id, row.provider, row.endpoint_id, row.surface], [7, 9, 'route-a', 'ep-a', 'chat']);
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.cache_read_tokens, row.latency_ms], [1000, 200, 400, 13]);
    assert.equal(row.cost_usd, 0.00592); // (600 × 3 + 400 × 0.3 + 200 × 15) / 1M + 0.001
    assert.deepEqual([row.user_message_chars, row.user_message_entropy], [5, 1.9219]);
    assert.equal(row.metadata.agent, 'claude-cli');
    assert.equal(row.metadata.user_agent, 'claude-cli/1.0.3 (external, cli)');
    assert.equal(row.metadata.session_id, 's-1');
    assert.deepEqual(row.metadata.routing, { provider: 'route-a', base_url: 'http://u/v1', endpoint_id: 'ep-a' });
    assert.ok(!JSON.stringify(row).includes('sk-abc'), 'the key prefix is not logged');
  });

  it('prices nothing for a request no route answered; unknown cache reads stay null', () => {
    const row = toApiLogRow(entry({ routing: undefined, status: 404, usage: undefined, errorCode: 'model_not_found' }));
    assert.equal(row.cost_usd, null);
    assert.equal(row.cache_read_tokens, null);
    assert.equal(row.provider, null);
    assert.equal(row.error_code, 'model_not_found');
  });

  it('labels rejections and synthetic probes in metadata', () => {
    const row = toApiLogRow(entry({ caller: undefined, status: 429, rejection: { reason: 'ip_blocked', credentialState: 'revoked' }, synthetic: false }));
    assert.equal(row.metadata.rejection, 'ip_blocked');
    assert.equal(row.metadata.credential_state, 'revoked');
    assert.equal(row.user_id, null);
    assert.equal(toApiLogRow(entry({ synthetic: true })).metadata.synthetic, true);
  });
});
