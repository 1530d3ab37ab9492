/**
 * The public stats snapshot's pure parts (docs/public-stats.md): the window of whole UTC weeks,
 * and the withholding rule at 2 and 3 accounts for counts, named items and weeks.
 */
import assert from 'node:assert/strict';
import { countOrWithheld, section, usageOrWithheld, weeksOf, windowOf, type Usage } from '../../../../../gateway/ops/public-stats/content';

const usage = (accounts: number, requests = 10): Usage => ({ requests, accounts, prompt_tokens: 1, completion_tokens: 1 });

describe('public stats content', () => {
  it('ends the window at the Monday 00:00 UTC of the current week and spans whole weeks', () => {
    const cases: Array<[string, string]> = [
      ['2026-12-07T00:00:00.000Z', '2026-12-07T00:00:00.000Z'], // a Monday, midnight: that Monday
      ['2026-12-07T00:00:00.001Z', '2026-12-07T00:00:00.000Z'],
      ['2026-12-06T23:59:59.999Z', '2026-11-30T00:00:00.000Z'], // Sunday night: the Monday before
      ['2026-12-09T12:00:00.000Z', '2026-12-07T00:00:00.000Z'], // a Wednesday
    ];
    for (const [now, end] of cases) {
      const window = windowOf(new Date(now), 26);
      assert.equal(window.end.toISOString(), end, now);
      assert.equal((window.end.getTime() - window.start.getTime()) / 86_400_000, 26 * 7);
    }
  });

  it('withholds counts and usage below 3 accounts, keeps them at 3', () => {
    assert.equal(countOrWithheld(2), null);
    assert.equal(countOrWithheld(3), 3);
    assert.equal(usageOrWithheld(usage(2)), null);
    assert.deepEqual(usageOrWithheld(usage(3)), usage(3));
  });

  it('leaves out named items below 3 accounts, counts them, and sorts the rest by requests', () => {
    const result = section<'model'>([{ model: 'a', ...usage(3, 5) }, { model: 'b', ...usage(2, 50) }, { model: 'c', ...usage(9, 7) }, { model: 'd', ...usage(0, 1) }]);
    assert.deepEqual(result.items.map((i) => i.model), ['c', 'a']);
    assert.equal(result.withheld, 2);
  });

  it('lists every week of the window in order, withholding weeks below 3 accounts and weeks without rows', () => {
    const start = new Date('2026-11-16T00:00:00Z');
    const weeks = weeksOf({ start, weeks: 3 }, new Map([['2026-11-16', usage(3)], ['2026-11-23', usage(2)]]));
    assert.deepEqual(weeks, [
      { week_start: '2026-11-16', withheld: false, ...usage(3) },
      { week_start: '2026-11-23', withheld: true },
      { week_start: '2026-11-30', withheld: true },
    ]);
  });
});
