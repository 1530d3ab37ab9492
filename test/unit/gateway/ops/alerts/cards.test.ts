/**
 * Alert cards: incoming-webhook JSON (`text` + `blocks`), counts past the distinct cap or after
 * lost events shown as floors, client text escaped and shortened, endpoints described.
 */
import assert from 'node:assert/strict';
import { clean, openingCard, recoveryCard } from '../../../../../gateway/ops/alerts/cards';
import { EventKind } from '../../../../../gateway/ops/alerts/event-ring';
import { IncidentTracker } from '../../../../../gateway/ops/alerts/incidents';
import { DISTINCT_CAP } from '../../../../../gateway/ops/alerts/tally';
import { BUILT_IN_RULES } from '../../../../../gateway/ops/alerts/types';

const rule = { enabled: true, threshold: 10, window: 60, cooldown: 0 };

describe('alert cards', () => {
  it('marks capped distinct counts as floors and names the top sources, prefixes and paths', () => {
    const t = new IncidentTracker({ ...BUILT_IN_RULES, auth_failure_spike: rule });
    const events = Array.from({ length: DISTINCT_CAP + 30 }, (_, i) => ({
      kind: EventKind.AuthFailure, at: 0, a: `10.0.${i}.1`, b: `10.0.${i}.1`, c: 'gk_abcdef', d: 'unknown', e: i % 2 ? '/v1/embeddings' : '/v1/chat/<script>',
    }));
    t.observe(events, 0, 0);
    const [opened] = t.evaluate(0, () => false);
    const card = openingCard(opened!.incident, rule, (id) => id);
    assert.match(card.text, /^:rotating_light: Authentication failure spike: 80 failed authentications within 60 s \(threshold 10\) from ≥ 50 sources$/);
    const raw = JSON.stringify(card.blocks);
    assert.ok(raw.includes('*Distinct addresses*\\n≥ 50'), raw);
    assert.ok(raw.includes('and ≥ 46 more'), 'past the cap, how many more is a floor');
    assert.ok(raw.includes('`gk_abcdef` ×80'));
    assert.ok(raw.includes('/v1/chat/&lt;script&gt;'), 'client text is escaped');
    assert.deepEqual((card.blocks as Array<{ type: string }>).map((b) => b.type), ['header', 'section', 'section', 'context']);
  });

  it('a circuit recovery card carries the incident picture with the endpoints described', () => {
    const t = new IncidentTracker({ ...BUILT_IN_RULES, circuit_open: { enabled: true, threshold: 1, window: 60, cooldown: 0 } });
    t.observe([{ kind: EventKind.CircuitOpen, at: 0, a: 'ep_1', b: undefined, c: undefined, d: 'availability', e: undefined }], 0, 0);
    t.evaluate(0, () => false);
    t.observe([{ kind: EventKind.CircuitClosed, at: 0, a: 'ep_1', b: undefined, c: undefined, d: undefined, e: undefined }], 0, 150_000);
    const [recovered] = t.evaluate(150_000, () => false);
    const card = recoveryCard(recovered!.incident, 150_000, (id) => `m via route-a (${id})`);
    assert.equal(card.text, ':white_check_mark: Recovered: Circuit breaker opened: Recovered after 3 min: 1 circuit openings in total');
    const raw = JSON.stringify(card.blocks);
    assert.ok(raw.includes('m via route-a (ep_1) ×1') && raw.includes('`availability` ×1') && raw.includes('*Still open*\\n0'));
  });

  it('cleans client text: control characters out, long values cut', () => {
    assert.equal(clean('a\nb\u0000c'), 'a b c');
    assert.equal(clean('x'.repeat(200)).length, 120);
  });
});
