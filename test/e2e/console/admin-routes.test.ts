/**
 * Route and key changes through the admin console against a real gateway: a file route retargeted
 * at another upstream after a verification (tagged `override`, then traffic reaches the new
 * upstream) and returned to its file definition; a file key taken out of rotation and put back;
 * the recent-requests filters and clearing the request log's error rows; the strategy switch and
 * a visibility override; the sign-in blocklist.
 */
import assert from 'node:assert/strict';
import { admin } from '../../support/admin';
import { screenshot } from '../../support/browser';
import { ADMIN_EMAIL, openConsole, sendChats, startAdminConsoleStack, type AdminConsoleStack } from '../../support/admin-console';
import { eventually } from '../../support/accounts';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream';

interface Route { route_id: string; source: string; base_url: string }

describe('admin console: routes, keys and the request log', function () {
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

  it('the recent-requests page shows a filter the server refuses on its field, and clears the error rows only', async () => {
    const { gw, a, b, t, userKey } = stack;
    await sendChats(gw, userKey, 2);
    a.setDefault({ kind: 'status', status: 400, message: 'bad request upstream' });
    b.setDefault({ kind: 'status', status: 400, message: 'bad request upstream' });
    const failed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${userKey}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'fail' }] }),
    });
    assert.equal(failed.status, 400);
    a.setDefault(undefined);
    b.setDefault(undefined);
    const count = async (errors: boolean): Promise<number> => Number((await t.db('api_logs').where('status', errors ? '>=' : '<', 400).count<Array<{ count: string }>>('* as count'))[0]!.count);
    await eventually(async () => (await count(true)) > 0 && (await count(false)) > 0, 'the request log holds the error and the successes');
    const errorRows = await count(true);
    const okRows = await count(false);

    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/requests');
    page.on('dialog', (d) => void d.accept());
    try {
      const filters = page.getByRole('form', { name: 'Filters' });
      await filters.getByLabel('Session id').fill('s'.repeat(300));
      await filters.getByRole('button', { name: 'Apply filters' }).click();
      await page.locator('#f-filter-session_id-error').filter({ hasText: "Invalid query parameter 'session_id'" }).waitFor();
      await filters.getByLabel('Session id').fill('');
      await filters.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByRole('status').filter({ hasText: /requests in 1 day\(s\); 0 offloaded/ }).waitFor();
      await screenshot(page, 'admin-requests-filtered');

      const clear = page.getByRole('form', { name: 'Clear recent errors' });
      await clear.getByRole('button', { name: 'Clear errors' }).click();
      await clear.getByRole('status').filter({ hasText: `${errorRows} error rows deleted.` }).waitFor();
      assert.equal(await count(true), 0);
      assert.equal(await count(false), okRows, 'successful rows are kept');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('switches the strategy and back to the file one, and a visibility override hides the model from a free account', async () => {
    const { gw, userKey } = stack;
    const router = async (): Promise<string> => (await admin<{ models: Array<{ id: string; router: string }> }>(gw, 'GET', '/admin/routing')).body.models.find((m) => m.id === 'm')!.router;
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/routing/m');
    try {
      const strategy = page.getByRole('form', { name: 'Strategy' });
      await strategy.getByLabel('Strategy').selectOption('routewise');
      await strategy.getByRole('button', { name: 'Set strategy' }).click();
      await strategy.getByRole('status').filter({ hasText: 'Strategy set to routewise.' }).waitFor();
      await strategy.getByText('Current strategy: routewise').waitFor();
      assert.equal(await router(), 'routewise');
      await strategy.getByRole('button', { name: "Use the file's strategy" }).click();
      await strategy.getByText('Current strategy: fixed').waitFor();
      assert.equal(await router(), 'fixed');

      await page.goto('/console/admin/visibility');
      const row = page.getByRole('table', { name: 'Who may see each model' }).getByRole('row').filter({ hasText: /^m/ });
      await row.getByRole('combobox', { name: 'Required role override of m' }).selectOption('pro');
      await row.getByRole('button', { name: 'Save' }).click();
      await row.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      await row.getByRole('strong').filter({ hasText: 'pro' }).waitFor();
      const hidden = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${userKey}` },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(hidden.status, 404, 'a free account may not see m');
      await row.getByRole('combobox', { name: 'Required role override of m' }).selectOption('');
      await row.getByRole('button', { name: 'Save' }).click();
      await row.getByRole('strong').filter({ hasText: 'anyone' }).waitFor();
      await sendChats(gw, userKey, 1);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('lists a blocked source and lifts the block', async () => {
    const { gw, userKey } = stack;
    const chat = (authorization: string) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'x-forwarded-for': '8.8.8.8', authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    for (let i = 0; i < 3; i += 1) assert.equal((await chat('Bearer gk_wrong')).status, 401);
    assert.equal((await chat(`Bearer ${userKey}`)).status, 429, 'the source is blocked');
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/auth-blocks');
    try {
      const row = page.getByRole('table', { name: 'Blocked sources' }).getByRole('row').filter({ hasText: '8.8.8.8' });
      await row.getByRole('cell', { name: '3', exact: true }).waitFor();
      await screenshot(page, 'admin-auth-blocks-listed');
      await row.getByRole('button', { name: 'Lift block' }).click();
      await page.getByText('No source is blocked.').waitFor();
      assert.equal((await chat(`Bearer ${userKey}`)).status, 200, 'the block is lifted');
    } finally {
      await close();
    }
  });
});
