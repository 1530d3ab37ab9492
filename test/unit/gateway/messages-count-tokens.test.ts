/**
 * The local count_tokens estimate against a real tokenizer on plain English text: the counts of
 * each paragraph of test/fixtures/count-tokens/plain-english.txt were recorded with the
 * `@anthropic-ai/tokenizer` package (reference-counts.json). The estimate must stay within 5 % in
 * total and 30 % on every paragraph (docs/inference-surfaces.md states the measured error).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { estimateInputTokens, estimateTextTokens, IMAGE_TOKENS, PER_MESSAGE_TOKENS } from '../../../gateway/translate/messages-surface/count-tokens';

const dir = join(__dirname, '../../fixtures/count-tokens');
const paragraphs = readFileSync(join(dir, 'plain-english.txt'), 'utf8').split(/\n\s*\n/).map((p) => p.trim()).filter((p) => p.length >= 300);
const reference = (JSON.parse(readFileSync(join(dir, 'reference-counts.json'), 'utf8')) as { counts: number[] }).counts;

describe('messages surface: count_tokens estimate', () => {
  it('is within 5 % of the reference tokenizer in total and 30 % per paragraph on plain English', () => {
    assert.equal(paragraphs.length, reference.length);
    let estimated = 0;
    let counted = 0;
    paragraphs.forEach((text, i) => {
      const estimate = Math.ceil(estimateTextTokens(text));
      const real = reference[i]!;
      assert.ok(Math.abs(estimate - real) / real <= 0.3, `paragraph ${i}: ${estimate} vs ${real}`);
      estimated += estimate;
      counted += real;
    });
    assert.ok(Math.abs(estimated - counted) / counted <= 0.05, `total ${estimated} vs ${counted}`);
  });

  it('counts framing per message, images, tool calls and tools', () => {
    const text = { messages: [{ role: 'user', content: 'hello world' }] };
    assert.equal(estimateInputTokens(text), PER_MESSAGE_TOKENS + 2);
    const image = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:' } }, { type: 'text', text: 'hello' }] }] };
    assert.equal(estimateInputTokens(image), PER_MESSAGE_TOKENS + IMAGE_TOKENS + 1);
    const tools = { messages: text.messages, tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }] };
    assert.ok(estimateInputTokens(tools) > estimateInputTokens(text) + 5);
    const calls = { messages: [...text.messages, { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'bash', arguments: '{"command":"ls -la"}' } }] }] };
    assert.ok(estimateInputTokens(calls) > estimateInputTokens(text) + PER_MESSAGE_TOKENS + 5);
  });

  it('counts non-ASCII characters and surrogate pairs once', () => {
    assert.ok(Math.abs(estimateTextTokens('日本語') - 1.8) < 1e-9);
    assert.ok(Math.abs(estimateTextTokens('🌍🌍') - 1.2) < 1e-9);
    assert.equal(estimateTextTokens('   '), 0);
  });
});
