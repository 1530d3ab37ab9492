/**
 * Slot display states of the operator's host view (docs/agent-hosts.md): applying N, N not applied,
 * redeploy to change, or nothing pending.
 */
import assert from 'node:assert/strict';
import { appliesRemoteSlots, slotsDisplay } from '../../agent/hosts/host-view';

describe('host slot display states', () => {
  const display = (saved: number | null, reported: number | null, online: boolean, runnerVersion: string | null) =>
    slotsDisplay({ saved, reported, online, runnerVersion });

  it('shows nothing pending for the host default or a confirmed number', () => {
    assert.equal(display(null, 3, true, '2'), null);
    assert.equal(display(null, 3, false, '1'), null);
    assert.equal(display(5, 5, false, '1'), null);
  });
  it('shows applying N while a raise waits for an online version-2 runner', () => {
    assert.equal(display(6, 3, true, '2'), 'applying 6');
    assert.equal(display(6, null, true, '3'), 'applying 6');
  });
  it('shows nothing pending for a lowering on an online version-2 runner (admission already uses it)', () => {
    assert.equal(display(2, 4, true, '2'), null);
  });
  it('shows N not applied while the host is offline', () => {
    assert.equal(display(6, 3, false, '2'), '6 not applied');
    assert.equal(display(2, 4, false, '1'), '2 not applied');
  });
  it('shows redeploy to change for a runner that ignores remote changes', () => {
    assert.equal(display(6, 3, true, '1'), 'redeploy to change');
    assert.equal(display(2, 4, true, null), 'redeploy to change');
    assert.equal(display(2, 4, true, 'dev'), 'redeploy to change');
  });
  it('knows which runner versions apply remote slot changes', () => {
    assert.deepEqual(['1', '2', '10', 'x', null, '2.5'].map(appliesRemoteSlots), [false, true, true, false, false, false]);
  });
});
