/**
 * The admin console moves live traffic: an administrator signs in, opens the weights of a model
 * with two endpoints, sets one endpoint's weight to 0 in the browser, and every following
 * inference request (sent with a user's API key) reaches the other fake upstream. The endpoint
 * zeroed is the one serving the caller (session affinity pins a caller), so the move is visible. Real gateway,
 * PostgreSQL, headless Chromium, two fake upstreams on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { admin } from '../../support/admin';
import { screenshot } from '../../support/browser';
import { ADMIN_EMAIL, endpointOf, openConsole, sendChats, startAdminConsoleStack, type AdminConsoleStack } from '../../support/admin-console';

describe('admin console: weights', function () {
  this.timeout(120_000);
  let stack: AdminConsoleStack;

  before(async () => {
    stack = await startAdminConsoleStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('a weight of 0 set in the console sends every later request to the other endpoint', async () => {
    const { gw, a, b, userKey } = stack;
    // Session affinity keeps one caller on one endpoint: zero the endpoint that serves this caller now.
    await sendChats(gw, userKey, 10);
    const servedByA = a.chatRequests().length >= b.chatRequests().length;
    const [served, other] = servedByA ? [a, b] : [b, a];
    assert.ok(served.chatRequests().length > 0);
    const zeroed = await endpointOf(gw, servedByA ? 'route-a' : 'route-b');
    const routeId = servedByA ? 'm#0' : 'm#1';

    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/routing');
    try {
      const table = page.getByRole('table', { name: 'Models and their routes' });
      await table.getByRole('link', { name: 'm', exact: true }).click();
      await page.getByRole('heading', { name: 'Model m' }).waitFor();
      const form = page.getByRole('form', { name: `Weight of ${zeroed}` });
      await form.getByLabel(`Weight override of ${zeroed}`).fill('0');
      await form.getByRole('button', { name: 'Save override' }).click();
      await form.getByRole('status').filter({ hasText: 'Weight override saved.' }).waitFor();
      const panel = page.getByRole('region', { name: `Route ${routeId}` });
      await panel.getByText('admin weight override of 0').first().waitFor();
      await screenshot(page, 'admin-model');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }

    const before = [served.chatRequests().length, other.chatRequests().length] as const;
    await sendChats(gw, userKey, 20);
    assert.equal(served.chatRequests().length, before[0], 'the zeroed endpoint received no request');
    assert.equal(other.chatRequests().length - before[1], 20, 'every later request went to the other endpoint');
  });

  it('an offload policy to the zeroed route is saved inactive with its reason, and active once the override is removed', async () => {
    const { gw } = stack;
    const listing = await admin<{ routes: Array<{ route_id: string; endpoint_id: string; weight_override: number | null }> }>(gw, 'GET', '/admin/routing/provider-routes/m');
    const zeroed = listing.body.routes.find((r) => r.weight_override === 0);
    assert.ok(zeroed, 'the previous test left one endpoint at weight 0');
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/routing/m');
    try {
      const form = page.getByRole('form', { name: 'Offload policy' });
      await form.getByLabel('Offload route').selectOption(zeroed.route_id);
      await form.getByLabel('Wait before offloading (seconds)').fill('0');
      await form.getByRole('button', { name: 'Save offload policy' }).click();
      await page.locator('#f-offload-wait-error').filter({ hasText: 'more than 0' }).waitFor();
      await form.getByLabel('Wait before offloading (seconds)').fill('2');
      await form.getByRole('button', { name: 'Save offload policy' }).click();
      const state = page.getByRole('status').filter({ hasText: `Offload to ${zeroed.route_id}` });
      await state.getByText('inactive').waitFor();
      await state.getByText(`offload route ${zeroed.route_id} has effective weight 0`).waitFor();

      await page.getByRole('region', { name: `Route ${zeroed.route_id}` }).getByRole('button', { name: 'Remove override' }).click();
      await state.getByText('active', { exact: true }).waitFor();
      const stored = await admin<{ offload_routes: Array<{ model_id: string; active: boolean }> }>(gw, 'GET', '/admin/routing/offload-routes');
      assert.deepEqual(stored.body.offload_routes.map((o) => [o.model_id, o.active]), [['m', true]]);
      await screenshot(page, 'admin-model-offload');

      await state.getByRole('button', { name: 'Clear offload policy' }).click();
      await page.getByText('No offload policy.').waitFor();
      assert.deepEqual((await admin<{ offload_routes: unknown[] }>(gw, 'GET', '/admin/routing/offload-routes')).body.offload_routes, []);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
