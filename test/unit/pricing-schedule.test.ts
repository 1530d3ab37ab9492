/**
 * `pricing_schedule` (docs/pricing.md): validation at registry load (model and route level), the pricing
 * in force at an instant (fake clock: boundaries, midnight wrap, before/after `effective_at`), and
 * `costOf` reading the schedule.
 */
import assert from 'node:assert/strict';
import { registryBuildContext } from '../../gateway/registry';
import { RegistryConfigError } from '../../gateway/registry/errors';
import { buildModel } from '../../gateway/registry/model-builder';
import { pricingAt } from '../../gateway/registry/pricing-schedule';
import type { Model, Pricing } from '../../gateway/registry/types';
import { costOf } from '../../gateway/request-log/cost';

const ctx = { ...registryBuildContext({}), file: 'models.yaml', warn: () => undefined };

function model(entry: Record<string, unknown>): Model {
  const outcome = buildModel({ id: 'm', name: 'M', provider: 'generic_compat', base_url: 'http://h/v1', ...entry }, 0, ctx);
  assert.ok('model' in outcome);
  return outcome.model;
}

const t = (iso: string) => Date.parse(iso);

const SCHEDULE = {
  effective_at: '2026-12-01T00:00:00Z',
  default: { prompt: '2' },
  windows: [
    { start: '22:00', end: '06:00', pricing: { prompt: '0.5', completion: '1' } },
    { start: '12:00', end: '13:00', pricing: { request: '0.01' } },
    { start: '2026-12-24T00:00:00Z', end: '2026-12-26T00:00:00Z', pricing: { prompt: '0' } },
  ],
};

describe('pricing schedule', () => {
  const pricing = model({ pricing: { prompt: '3', completion: '15' }, pricing_schedule: SCHEDULE }).routes[0]!.pricing;

  it('keeps the base pricing before effective_at and switches at it (inclusive)', () => {
    assert.equal(pricingAt(pricing, t('2026-11-30T23:59:59.999Z')), pricing);
    assert.deepEqual({ ...pricingAt(pricing, t('2026-11-30T23:59:59.999Z')), schedule: undefined }, { prompt: '3', completion: '15', schedule: undefined });
    // 00:00 on the effective day is inside the wrapped night window.
    assert.deepEqual(pricingAt(pricing, t('2026-12-01T00:00:00Z')), { prompt: '0.5', completion: '1' });
  });

  it('applies default (over base) outside windows, window pricing over base inside [start, end)', () => {
    assert.deepEqual(pricingAt(pricing, t('2026-12-02T21:59:59.999Z')), { prompt: '2', completion: '15' });
    assert.deepEqual(pricingAt(pricing, t('2026-12-02T22:00:00Z')), { prompt: '0.5', completion: '1' }, 'start is inclusive');
    assert.deepEqual(pricingAt(pricing, t('2026-12-03T05:59:59.999Z')), { prompt: '0.5', completion: '1' }, 'wraps past midnight');
    assert.deepEqual(pricingAt(pricing, t('2026-12-03T06:00:00Z')), { prompt: '2', completion: '15' }, 'end is exclusive');
    assert.deepEqual(pricingAt(pricing, t('2026-12-03T12:00:00Z')), { prompt: '3', completion: '15', request: '0.01' }, 'window overrides base, not default');
    assert.deepEqual(pricingAt(pricing, t('2026-12-03T13:00:00Z')), { prompt: '2', completion: '15' });
  });

  it('handles dated windows with the same half-open rule; the first listed window wins', () => {
    assert.deepEqual(pricingAt(pricing, t('2026-12-24T00:00:00Z')), { prompt: '0.5', completion: '1' }, 'the daily night window is listed first');
    assert.deepEqual(pricingAt(pricing, t('2026-12-24T10:00:00Z')), { prompt: '0', completion: '15' });
    assert.deepEqual(pricingAt(pricing, t('2026-12-25T21:59:00Z')), { prompt: '0', completion: '15' });
    assert.deepEqual(pricingAt(pricing, t('2026-12-26T10:00:00Z')), { prompt: '2', completion: '15' }, 'end is exclusive');
  });

  it('prices a request by the schedule in costOf (tokens, request fee, images)', () => {
    const usage = { prompt_tokens: 1_000_000, completion_tokens: 1_000_000 };
    assert.equal(costOf(pricing, usage, { at: t('2026-11-30T12:00:00Z') }), 18);
    assert.equal(costOf(pricing, usage, { at: t('2026-12-02T23:00:00Z') }), 1.5);
    assert.equal(costOf(pricing, usage, { at: t('2026-12-02T15:00:00Z') }), 17);
    assert.equal(costOf(pricing, usage, { at: t('2026-12-02T12:30:00Z') }), 18.01);
    const images: Pricing = { image: '0.002', request: '0.001' };
    assert.equal(costOf(images, undefined, { at: 0, images: 3 }), 0.007);
    assert.equal(costOf({ input_cache_writes: '4', prompt: '1' }, { prompt_tokens: 1_000_000, cache_write_tokens: 250_000 }, { at: 0 }), 1.75);
  });

  it('lets a route schedule win over the model schedule and compiles against the route base', () => {
    const m = model({
      pricing: { prompt: '3' },
      pricing_schedule: { effective_at: '2026-01-01T00:00:00Z', default: { prompt: '9' } },
      route: [{ pricing: { prompt: '4' } }, { pricing_schedule: { effective_at: '2026-01-01T00:00:00Z', windows: [{ start: '00:00', end: '24:00', pricing: { completion: '1' } }] } }],
    });
    assert.deepEqual(pricingAt(m.routes[0]!.pricing, t('2026-06-01T00:00:00Z')), { prompt: '9' });
    assert.deepEqual(pricingAt(m.routes[1]!.pricing, t('2026-06-01T23:59:59Z')), { prompt: '3', completion: '1' });
    assert.deepEqual(pricingAt(model({ pricing: { prompt: '1' } }).routes[0]!.pricing, 5), { prompt: '1' }, 'no schedule: base always');
  });

  it('refuses local offsets, malformed windows and unknown price keys at load, naming the field', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ effective_at: '2026-12-01T00:00:00+01:00' }, /pricing_schedule.effective_at.*UTC-only/],
      [{ effective_at: '2026-12-01' }, /pricing_schedule.effective_at/],
      [{ effective_at: '2026-12-01T00:00:00Z', windows: [{ start: '22:00', end: '2026-12-02T00:00:00Z', pricing: {} }] }, /windows.0.start.*both daily/],
      [{ effective_at: '2026-12-01T00:00:00Z', windows: [{ start: '25:00', end: '01:00', pricing: {} }] }, /windows.0.start/],
      [{ effective_at: '2026-12-01T00:00:00Z', windows: [{ start: '10:00', end: '10:00', pricing: {} }] }, /windows.0.end/],
      [{ effective_at: '2026-12-01T00:00:00Z', windows: [{ start: '2026-12-02T00:00:00Z', end: '2026-12-01T00:00:00Z', pricing: {} }] }, /end after start/],
      [{ effective_at: '2026-12-01T00:00:00Z', default: { promt: '1' } }, /pricing_schedule.default/],
      [{ effective_at: '2026-12-01T00:00:00Z', default: { prompt: 'cheap' } }, /pricing_schedule.default.prompt/],
      [{ effective_at: '2026-12-01T00:00:00Z', window: [] }, /pricing_schedule/],
    ];
    assert.throws(() => model({ pricing: { prompt: '1', schedule: 'x' } }), /invalid 'pricing'.*pricing_schedule/);
    for (const [schedule, message] of cases) {
      assert.throws(() => model({ pricing_schedule: schedule }), (err: unknown) => err instanceof RegistryConfigError && message.test(err.message), JSON.stringify(schedule));
      assert.throws(() => model({ route: [{ pricing_schedule: schedule }] }), RegistryConfigError, `route-level ${JSON.stringify(schedule)}`);
    }
  });
});
