/**
 * Route and key changes through the admin console against a real gateway: a file route retargeted
 * at another upstream after a verification (tagged `override`, then traffic reaches the new
 * upstream) and returned to its file definition; a file key taken out of rotation and put back.
 */
import assert from 'node:assert/strict';
import { admin } from '../../support/admin';
import { screenshot } from '../../support/browser';
import { ADMIN_EMAIL, openConsole, sendChats, startAdminConsoleStack, type AdminConsoleStack } from '../../support/admin-console';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream';

interface Route { route_id: string; source: string; base_url: string }

describe('admin console: routes and keys', function () {
  this.timeout(120_000);
  let stack: AdminConsoleStack;
  let c: FakeUpstream;

  before(async () => {
    stack = await startAdminConsoleStack();
    c = await startFakeUpstream();
  });
  after(async () => {
    await c?.close();
    await stack?.close();
  });

  const routeOf = async (id: string): Promise<Route> => {
    const listing = await admin<{ routes: Route[] }>(stack.gw, 'GET', '/admin/routing/provider-routes/m');
    return listing.body.routes.find((r) => r.route_id === id)!;
  };

  it('retargets a file route after a verification, traffic follows, and removing the retarget restores the file', async () => {
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/routing/m');
    try {
      const region = page.getByRole('region', { name: 'Route m#1' });
      await region.getByRole('button', { name: 'Retarget…' }).click();
      const form = region.getByRole('form', { name: 'Retarget m#1' });
      await form.getByRole('button', { name: 'Save' }).click();
      await form.getByText('Change at least one of base URL').waitFor();
      await form.getByLabel('Base URL').fill(c.url);
      await form.getByRole('button', { name: 'Verify' }).click();
      await form.getByRole('status').filter({ hasText: 'Verification succeeded (not saved)' }).waitFor();
      assert.equal((await routeOf('m#1')).source, 'yaml', 'a verification saves nothing');
      await form.getByRole('button', { name: 'Save' }).click();
      await form.getByRole('status').filter({ hasText: 'Route saved.' }).waitFor();
      await region.getByText('override', { exact: true }).first().waitFor();
      const saved = await routeOf('m#1');
      assert.deepEqual([saved.source, saved.base_url], ['override', c.url]);
      await screenshot(page, 'admin-model-retarget');

      // Only route m#1 (now on c) may serve: take route-a out of rotation for the check.
      assert.equal((await admin(stack.gw, 'PATCH', '/admin/providers/route-a/disabled', { disabled: true })).status, 200);
      const before = c.chatRequests().length;
      await sendChats(stack.gw, stack.userKey, 3);
      assert.equal(c.chatRequests().length - before, 3, 'the retargeted route serves from the new upstream');
      assert.equal((await admin(stack.gw, 'PATCH', '/admin/providers/route-a/disabled', { disabled: false })).status, 200);

      await page.reload();
      await region.getByRole('button', { name: 'Remove retarget' }).click();
      await region.getByRole('status').filter({ hasText: 'the file definition applies again' }).waitFor();
      assert.equal((await routeOf('m#1')).source, 'yaml');
      assert.notEqual((await routeOf('m#1')).base_url, c.url);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('takes a file key out of rotation and puts it back', async () => {
    const envKey = async (): Promise<{ disabled: boolean; fingerprint: string }> => {
      const keys = await admin<{ env_keys: Array<{ provider: string; disabled: boolean; fingerprint: string }> }>(stack.gw, 'GET', '/admin/provider-keys');
      return keys.body.env_keys.find((k) => k.provider === 'route-a')!;
    };
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/keys');
    try {
      const row = page.getByRole('table', { name: 'Keys from the configuration files' }).getByRole('row').filter({ hasText: 'route-a' });
      await row.getByRole('button', { name: 'Disable' }).click();
      await row.getByText('disabled', { exact: true }).waitFor();
      assert.equal((await envKey()).disabled, true);
      await row.getByRole('button', { name: 'Enable' }).click();
      await row.getByText('in use', { exact: true }).waitFor();
      assert.equal((await envKey()).disabled, false);
      await row.getByRole('combobox', { name: `Minimum role of file key ${(await envKey()).fingerprint}` }).selectOption('pro');
      await row.getByRole('button', { name: 'Set' }).click();
      await row.getByRole('status').filter({ hasText: 'Minimum role saved.' }).waitFor();
      const keys = await admin<{ env_keys: Array<{ provider: string; min_role: string | null }> }>(stack.gw, 'GET', '/admin/provider-keys');
      assert.equal(keys.body.env_keys.find((k) => k.provider === 'route-a')?.min_role, 'pro');
    } finally {
      await close();
    }
  });
});
