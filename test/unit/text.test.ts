import assert from 'node:assert/strict';
import { cleanText, findBadText, jsonDepthExceeds, textProblem } from '../../lib/text';

describe('text rule', () => {
  it('names NUL and unpaired surrogates, and passes paired ones', () => {
    assert.equal(textProblem('plain é 😀'), undefined);
    assert.equal(textProblem('a\u0000b'), 'nul');
    assert.equal(textProblem('a\uD800b'), 'surrogate');
    assert.equal(textProblem('a\uDC00'), 'surrogate');
    assert.equal(textProblem('\uD83D\uDE00'), undefined);
  });

  it('replaces each bad unit with U+FFFD and leaves clean text alone', () => {
    assert.equal(cleanText('a\u0000b\uD800c'), 'a\uFFFDb\uFFFDc');
    assert.equal(cleanText('\uDC00\uD83D\uDE00'), '\uFFFD\uD83D\uDE00');
    const clean = 'nothing to do';
    assert.equal(cleanText(clean), clean);
  });

  it('finds the first bad string or key with its path', () => {
    assert.deepEqual(findBadText({ a: [1, 'ok', { b: 'x\u0000' }] }), { path: 'a.2.b', problem: 'nul' });
    assert.deepEqual(findBadText({ ok: 1, ['k\uD800']: 1 }), { path: 'k\uD800', problem: 'surrogate' });
    assert.deepEqual(findBadText({ env: { A: 'fine', B: 'bad\u0000' } }, 'body'), { path: 'body.env.B', problem: 'nul' });
    assert.equal(findBadText({ a: ['b', { c: 'd' }], n: null, t: true }), undefined);
  });

  it('walks a very deep value without recursion', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(findBadText(deep)?.problem, 'nul');
  });

  it('bounds JSON depth outside strings only', () => {
    const nested = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n));
    assert.equal(jsonDepthExceeds(nested(64)), false);
    assert.equal(jsonDepthExceeds(nested(65)), true);
    assert.equal(jsonDepthExceeds(Buffer.from(JSON.stringify({ s: '[[[[[[[[[["\\' }))), false, 'brackets in strings do not count');
    assert.equal(jsonDepthExceeds(Buffer.from(JSON.stringify({ s: '"[' }) + '['.repeat(3)), 3), false);
    assert.equal(jsonDepthExceeds(Buffer.from('{"a":' + '['.repeat(4)), 4), true);
    const afterEscapedBackslash = Buffer.from(`{"s":"\\\\","a":${'['.repeat(3)}${']'.repeat(3)}}`);
    assert.equal(jsonDepthExceeds(afterEscapedBackslash, 3), true, 'a string ending in an escaped backslash ends at its quote');
    assert.equal(jsonDepthExceeds(afterEscapedBackslash, 4), false);
  });
});
