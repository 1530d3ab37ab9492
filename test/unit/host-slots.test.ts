/**
 * Effective slots (docs/agent-hosts.md): the lower of the saved number and the heartbeat-reported total.
 */
import assert from 'node:assert/strict';
import { effectiveSlots } from '../../agent/hosts/placement';

describe('effectiveSlots', () => {
  it('uses the reported total when nothing is saved', () => {
    assert.equal(effectiveSlots({ slots_saved: null, slots_total: 5 }, 3), 5);
  });
  it('uses the lower of saved and reported', () => {
    assert.equal(effectiveSlots({ slots_saved: 2, slots_total: 5 }, 3), 2);
    assert.equal(effectiveSlots({ slots_saved: 8, slots_total: 5 }, 3), 5);
  });
  it('admits nothing before the runner has reported', () => {
    assert.equal(effectiveSlots({ slots_saved: null, slots_total: null }, 3), 0);
    assert.equal(effectiveSlots({ slots_saved: 4, slots_total: null }, 3), 0);
  });
});
