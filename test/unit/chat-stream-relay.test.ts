/**
 * The chat stream relay's byte pass-through gives exactly the output of its parsing path, however
 * the upstream's bytes are cut into chunks: plain events forwarded as bytes, usage chunks completed,
 * attribution removed, comments and other fields dropped, CRLF and multi-line events parsed.
 */
import assert from 'node:assert/strict';
import { relayAtCuts, RELAY_ROUTE, writeRecorder } from '../support/stream-relay';
import { ChatStreamRelay } from '../../gateway/surfaces/chat-stream';
import { seededRng } from '../../gateway/routing/weighted-order';

function relayed(bytes: Buffer, cuts: number[], passThrough: boolean): { text: string; usage: unknown } {
  const { text, relay } = relayAtCuts(undefined, bytes, cuts, { passThrough });
  return { text, usage: relay.usage };
}

const chunk = (content: string, extra: Record<string, unknown> = {}): string => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }], ...extra });

const STREAMS: Record<string, string> = {
  plain: [...Array.from({ length: 20 }, (_, i) => `data: ${chunk(`tok${i} `)}\n\n`), `data: ${JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29, prompt_tokens_details: { cached_tokens: 3 } } })}\n\n`, 'data: [DONE]\n\n'].join(''),
  'multibyte text, a quoted "usage" in content, attribution': [
    `data: ${chunk('héllo 🌍 ')}\n\n`,
    `data: ${chunk('the word "usage" in quotes')}\n\n`,
    `data: ${chunk('x', { _routing: { provider: 'secret-route' } })}\n\n`,
    `data: ${JSON.stringify({ _routing: { provider: 'only' } })}\n\n`,
    `data: ${chunk('日本語のテキスト')}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } })}\n\n`,
    'data: [DONE]\n\n',
  ].join(''),
  'comments, other fields, no space after the colon, multi-line data': [
    ': keep-alive\n\n',
    `event: message\ndata: ${chunk('a')}\n\n`,
    `data:${chunk('b')}\n\n`,
    'data: {"id":"c1",\ndata: "choices":[]}\n\n',
    `id: 7\ndata: ${chunk('c')}\n\n`,
    `data: ${chunk('d')}\n\n`,
    'data: [DONE]\n\n',
  ].join(''),
  'near misses of the markers (max_usage, x_routing, _routingz, usage" in text) and a real one after them': [
    `data: ${chunk('a', { max_usage: 1 })}\n\n`,
    `data: ${chunk('b', { x_routing: 'kept' })}\n\n`,
    `data: ${chunk('c', { _routingz: 'kept' })}\n\n`,
    `data: ${chunk('usage" and _routing" and "_rout')}\n\n`,
    `data: ${chunk('d', { _routing: { provider: 'secret-route' } })}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } })}\n\n`,
    'data: [DONE]\n\n',
  ].join(''),
  'CRLF framing': [`data: ${chunk('a')}\r\n\r\n`, `data: ${chunk('b')}\r\n\r\n`, 'data: [DONE]\r\n\r\n'].join(''),
  'mixed framing and a last event without its blank line': [`data: ${chunk('a')}\n\n`, `data: ${chunk('b')}\r\n\r\n`, `data: ${chunk('c')}\n\n`, `data: ${chunk('d')}`].join(''),
};

describe('chat stream relay: byte pass-through', () => {
  for (const [name, text] of Object.entries(STREAMS)) {
    it(`matches the parsing path for every chunking: ${name}`, () => {
      const bytes = Buffer.from(text, 'utf8');
      const reference = relayed(bytes, [], false);
      assert.doesNotMatch(reference.text, /secret-route|"_routing"/);
      assert.ok(reference.text.length > 0);
      // Whole, byte by byte, and 300 random chunkings (cuts anywhere, inside UTF-8 sequences too).
      const cutsList: number[][] = [[], Array.from({ length: bytes.length }, (_, i) => i)];
      const random = seededRng(20261121); // seeded: a failing chunking can be replayed
      for (let i = 0; i < 300; i += 1) {
        const n = 1 + Math.floor(random() * 12);
        cutsList.push(Array.from({ length: n }, () => Math.floor(random() * bytes.length)).sort((a, b) => a - b));
      }
      for (const cuts of cutsList) {
        for (const passThrough of [true, false]) {
          const got = relayed(bytes, cuts, passThrough);
          assert.equal(got.text, reference.text, `cuts ${cuts.join(',')} passThrough=${passThrough}`);
          assert.deepEqual(got.usage, reference.usage);
        }
      }
    });
  }

  it('completes the usage chunk and forwards plain events unchanged', () => {
    const { text, usage } = relayed(Buffer.from(STREAMS.plain!), [], true);
    assert.ok(text.startsWith(`data: ${chunk('tok0 ')}\n\n`));
    assert.match(text, /"cached_tokens":3/);
    assert.deepEqual((usage as { cached_tokens?: number }).cached_tokens, 3);
    assert.ok(text.endsWith('data: [DONE]\n\n'));
  });

  it('writes once per tick, whatever the number of chunks', async () => {
    const rec = writeRecorder();
    const relay = new ChatStreamRelay(rec.res, RELAY_ROUTE, undefined);
    for (let i = 0; i < 10; i += 1) relay.push(Buffer.from(`data: ${chunk(String(i))}\n\n`));
    assert.equal(rec.writes, 0);
    await new Promise((r) => process.nextTick(r));
    assert.equal(rec.writes, 1);
    assert.equal(rec.text().split('\n\n').length - 1, 10);
  });
});
