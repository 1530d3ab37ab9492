import assert from 'node:assert/strict';
import type { Model, Route } from '../../gateway/registry';
import { estimatePromptTokens } from '../../gateway/routing/prompt-estimate';
import { preferLighter, PrefillTracker } from '../../gateway/routing/prefill';
import { fixedStrategy } from '../../gateway/routing/selector';
import { seededRng } from '../../gateway/routing/weighted-order';

const route = (endpointId: string, weight = 1) => ({ endpointId, weight } as unknown as Route);
const MODEL = { id: 'm', routes: [] } as unknown as Model;

function tracker(options: { intervene?: number; maxElephants?: number; enabled?: boolean } = {}) {
  const clock = { now: 0 };
  const t = new PrefillTracker({
    enabled: options.enabled ?? true, interveneTokens: options.intervene ?? 1000, elephantTokens: 30_000,
    maxElephantsPerEndpoint: options.maxElephants ?? 1, memoryMs: 300_000, now: () => clock.now,
  });
  return { t, clock };
}

describe('prefill-aware selection', () => {
  it('power-of-two choice engages only when the heavier draw has at least the intervention threshold queued', () => {
    const { t } = tracker({ intervene: 1000 });
    t.start('a', 999, false);
    assert.deepEqual(preferLighter([route('a'), route('b')], t, false).map((r) => r.endpointId), ['a', 'b'], 'below the threshold: the weighted draw stands');
    t.start('a', 1, false);
    assert.deepEqual(preferLighter([route('a'), route('b')], t, false).map((r) => r.endpointId), ['b', 'a'], 'at the threshold: the lighter draw goes first');
    t.start('b', 2000, false);
    assert.deepEqual(preferLighter([route('a'), route('b')], t, false).map((r) => r.endpointId), ['a', 'b'], 'the first draw is lighter: kept');
    t.finish('a', 1000, false);
    assert.equal(t.backlog('a'), 0);
  });

  it('compares only the two weighted draws, not the whole list', () => {
    const { t } = tracker({ intervene: 10 });
    t.start('a', 500, false);
    t.start('b', 400, false);
    const order = preferLighter([route('a'), route('b'), route('c')], t, false).map((r) => r.endpointId);
    assert.deepEqual(order, ['b', 'a', 'c']);
  });

  it('an elephant avoids endpoints at their concurrent-elephant limit; small prompts do not', () => {
    const { t } = tracker({ intervene: 1_000_000, maxElephants: 1 });
    t.start('a', 40_000, true);
    assert.equal(t.isElephant(30_000), true);
    assert.equal(t.isElephant(29_999), false);
    assert.deepEqual(preferLighter([route('a'), route('b'), route('c')], t, true).map((r) => r.endpointId), ['b', 'a', 'c']);
    assert.deepEqual(preferLighter([route('a'), route('b')], t, false).map((r) => r.endpointId), ['a', 'b']);
    t.start('b', 40_000, true);
    t.start('c', 40_000, true);
    assert.deepEqual(preferLighter([route('a'), route('b'), route('c')], t, true).map((r) => r.endpointId), ['a', 'b', 'c'], 'no endpoint has room: order unchanged');
  });

  it('switched off: the weighted order is untouched', () => {
    const { t } = tracker({ enabled: false, intervene: 0 });
    t.start('a', 10_000, false);
    assert.deepEqual(preferLighter([route('a'), route('b')], t, false).map((r) => r.endpointId), ['a', 'b']);
  });

  it('remembers a caller\'s prompt size per endpoint for the memory lifetime (prefix-cache estimate)', () => {
    const { t, clock } = tracker();
    assert.equal(t.uncached('k', 'a', 5000), 5000);
    t.remember('k', 'a', 5000);
    assert.equal(t.uncached('k', 'a', 5600), 600, 'the remembered prefix counts as cached');
    assert.equal(t.uncached('k', 'b', 5600), 5600, 'another endpoint has no cache of it');
    assert.equal(t.uncached('k', 'a', 1000), 1000, 'a shorter prompt is a new conversation');
    assert.equal(t.uncached(undefined, 'a', 5600), 5600);
    clock.now += 300_001;
    assert.equal(t.uncached('k', 'a', 5600), 5600, 'forgotten after the lifetime');
  });

  it('fixed strategy: with a seeded rng the first pick follows the weights when backlogs are empty', () => {
    const { t } = tracker();
    const rng = seededRng(7);
    const counts: Record<string, number> = { a: 0, b: 0 };
    for (let i = 0; i < 10_000; i += 1) counts[fixedStrategy([route('a', 3), route('b', 1)], { model: MODEL, rng, prefill: t, promptTokens: 10, elephant: false })[0]!.endpointId]! += 1;
    assert.ok(counts.a! > 7000 && counts.a! < 8000, JSON.stringify(counts));
  });

  it('fixed strategy: a heavy backlog on the favoured endpoint shifts traffic to the lighter one', () => {
    const { t } = tracker({ intervene: 1000 });
    t.start('a', 50_000, false);
    const rng = seededRng(7);
    let a = 0;
    for (let i = 0; i < 1000; i += 1) if (fixedStrategy([route('a', 3), route('b', 1)], { model: MODEL, rng, prefill: t, promptTokens: 10, elephant: false })[0]!.endpointId === 'a') a += 1;
    assert.equal(a, 0, 'two routes: every draw pair contains b, the lighter');
  });

  it('estimates prompt tokens: 4 bytes of UTF-8 text per token, 85 per image, 200 per audio input', () => {
    const tokens = estimatePromptTokens([
      { role: 'user', content: 'abcdefgh' },
      { role: 'user', content: [{ type: 'text', text: 'éé' }, { type: 'image_url', image_url: { url: 'x' } }, { type: 'input_audio', input_audio: { data: '' } }] },
    ]);
    assert.equal(tokens, 2 + 1 + 85 + 200);
  });
});
