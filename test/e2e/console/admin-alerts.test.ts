/**
 * The admin console's Alerts page in headless Chromium against a real gateway: it shows the rules
 * in force, and its snooze and mute buttons store what the admin API then reports.
 */
import assert from 'node:assert/strict';
import { screenshot } from '../../support/browser';
import { admin } from '../../support/admin';
import { ADMIN_EMAIL, openConsole, startAdminConsoleStack, type AdminConsoleStack } from '../../support/admin-console';

interface View {
  snooze: { active: boolean; until: string | null };
  mutes: Array<{ type: string; muted: boolean; duration: string | null; until: string | null }>;
}

describe('admin console: alerts', function () {
  this.timeout(120_000);
  let stack: AdminConsoleStack;

  before(async () => {
    stack = await startAdminConsoleStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('mutes a type, snoozes every alert and undoes both through the page', async () => {
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/alerts');
    try {
      await page.getByRole('heading', { level: 1, name: 'Alerts', exact: true }).waitFor();
      const mutes = page.getByRole('table', { name: 'Mutes by alert type' });
      const circuit = mutes.getByRole('row').filter({ hasText: 'circuit_open' });
      await circuit.getByText('on: 1 in 300 s, cooldown 300 s').waitFor();
      await mutes.getByRole('row').filter({ hasText: 'auth_failure_spike' }).getByRole('cell', { name: 'off', exact: true }).waitFor();

      await circuit.getByRole('button', { name: 'Mute 1 day' }).click();
      await circuit.getByText(/muted until/).waitFor();
      let view = (await admin<View>(stack.gw, 'GET', '/admin/alerts')).body;
      const mute = view.mutes.find((m) => m.type === 'circuit_open')!;
      assert.equal(mute.duration, '1d');
      assert.ok(Math.abs(Date.parse(mute.until!) - (Date.now() + 86_400_000)) < 60_000);

      const snooze = page.getByRole('region', { name: 'Snooze' });
      await snooze.getByRole('button', { name: '7 days' }).click();
      await snooze.getByText(/Every alert is snoozed until/).waitFor();
      assert.equal((await admin<View>(stack.gw, 'GET', '/admin/alerts')).body.snooze.active, true);
      await screenshot(page, 'admin-alerts');

      await snooze.getByRole('button', { name: 'End the snooze' }).click();
      await snooze.getByText(/Not snoozed/).waitFor();
      await circuit.getByRole('button', { name: 'Unmute', exact: true }).click();
      await circuit.getByText('active', { exact: true }).waitFor();
      view = (await admin<View>(stack.gw, 'GET', '/admin/alerts')).body;
      assert.equal(view.snooze.active, false);
      assert.ok(view.mutes.every((m) => !m.muted));
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
