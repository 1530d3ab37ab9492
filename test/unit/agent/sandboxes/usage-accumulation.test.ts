/**
 * Per-day running time between two readings (gaps count at most 120 s; UTC days): the
 * whole gap when short, its last 120 s when longer, split at UTC midnight.
 */
import assert from 'node:assert/strict';
import { runningSecondsByDay, USAGE_GAP_CAP_SECONDS } from '../../../../agent/sandboxes/usage-accumulation';

const at = (iso: string) => new Date(iso);

describe('container usage accumulation', () => {
  it('counts a gap up to 120 s in full', () => {
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:00.000Z'), at('2026-11-25T10:00:30.000Z')), [{ day: '2026-11-25', seconds: 30 }]);
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:00.000Z'), at('2026-11-25T10:02:00.000Z')), [{ day: '2026-11-25', seconds: 120 }]);
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:00.000Z'), at('2026-11-25T10:00:00.250Z')), [{ day: '2026-11-25', seconds: 0.25 }]);
  });

  it('caps a longer gap at 120 s (a silent host claims nothing it did not observe)', () => {
    assert.equal(USAGE_GAP_CAP_SECONDS, 120);
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:00.000Z'), at('2026-11-25T10:10:00.000Z')), [{ day: '2026-11-25', seconds: 120 }]);
    assert.deepEqual(runningSecondsByDay(at('2026-11-20T10:00:00.000Z'), at('2026-11-25T10:00:00.000Z')), [{ day: '2026-11-25', seconds: 120 }]);
  });

  it('splits across UTC midnight, counting the end of a capped gap', () => {
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T23:59:40.000Z'), at('2026-11-26T00:00:20.000Z')), [
      { day: '2026-11-25', seconds: 20 }, { day: '2026-11-26', seconds: 20 },
    ]);
    // 10 minutes silent: only the last 120 s count, 90 before midnight and 30 after.
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T23:50:00.000Z'), at('2026-11-26T00:00:30.000Z')), [
      { day: '2026-11-25', seconds: 90 }, { day: '2026-11-26', seconds: 30 },
    ]);
    // Ending exactly at midnight belongs wholly to the day before.
    assert.deepEqual(runningSecondsByDay(at('2026-12-31T23:59:00.000Z'), at('2027-01-01T00:00:00.000Z')), [{ day: '2026-12-31', seconds: 60 }]);
    // Starting exactly at midnight belongs wholly to the new day.
    assert.deepEqual(runningSecondsByDay(at('2027-01-01T00:00:00.000Z'), at('2027-01-01T00:00:45.000Z')), [{ day: '2027-01-01', seconds: 45 }]);
  });

  it('adds nothing when the clock did not move forward', () => {
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:00.000Z'), at('2026-11-25T10:00:00.000Z')), []);
    assert.deepEqual(runningSecondsByDay(at('2026-11-25T10:00:10.000Z'), at('2026-11-25T10:00:00.000Z')), []);
  });

  it('accumulates a day of 30 s reports to the running time (sum of shares)', () => {
    let total = 0;
    const start = Date.parse('2026-11-25T00:00:00.000Z');
    for (let t = start; t < start + 86_400_000; t += 30_000) {
      for (const s of runningSecondsByDay(new Date(t), new Date(t + 30_000))) if (s.day === '2026-11-25') total += s.seconds;
    }
    assert.equal(total, 86_400);
  });
});
