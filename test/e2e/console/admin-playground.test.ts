/**
 * The admin console's Playground page in headless Chromium against a real gateway (PostgreSQL,
 * two fake upstreams): an administrator sends a prompt pinned to one route and reads the answer
 * and the route that gave it; a pinned route that fails shows the error and the failed attempt
 * with the upstream's status (no fallback to the other route).
 */
import assert from 'node:assert/strict';
import { screenshot } from '../../support/browser';
import { ADMIN_EMAIL, openConsole, startAdminConsoleStack, type AdminConsoleStack } from '../../support/admin-console';

describe('admin console: playground', function () {
  this.timeout(120_000);
  let stack: AdminConsoleStack;

  before(async () => {
    stack = await startAdminConsoleStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('sends a prompt to a pinned route and shows the answer with its routing; a failing pinned route shows the failed attempt', async () => {
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/playground');
    try {
      await page.getByRole('heading', { level: 1, name: 'Playground', exact: true }).waitFor();
      const form = page.getByRole('form', { name: 'Playground' });
      await form.getByRole('button', { name: 'Send' }).click();
      await form.getByText('Choose a model').last().waitFor();
      await form.getByLabel('Model').selectOption('m');
      const routeB = await form.getByLabel('Route').locator('option', { hasText: 'route-b' }).getAttribute('value');
      assert.ok(routeB, 'route-b is offered');
      await form.getByLabel('Route').selectOption(routeB);
      await form.getByLabel('Prompt').fill('Say hello');
      stack.b.enqueue({ kind: 'json', content: 'hello from b' });
      await form.getByRole('button', { name: 'Send' }).click();
      const result = page.getByRole('region', { name: 'Playground result' });
      await result.getByText('hello from b').waitFor();
      await result.getByText(routeB).waitFor();
      assert.equal(stack.a.requests.length, 0);
      await screenshot(page, 'admin-playground');

      const routeA = await form.getByLabel('Route').locator('option', { hasText: 'route-a' }).getAttribute('value');
      assert.ok(routeA, 'route-a is offered');
      await form.getByLabel('Route').selectOption(routeA);
      stack.a.enqueue({ kind: 'status', status: 500, message: 'engine crashed' });
      const before = stack.b.requests.length;
      await form.getByRole('button', { name: 'Send' }).click();
      await result.getByText(/^502: /).waitFor();
      const attempt = result.getByRole('table', { name: 'Failed attempts' }).getByRole('row').filter({ hasText: 'route-a' });
      await attempt.getByText('500', { exact: true }).waitFor();
      assert.equal(stack.b.requests.length, before, 'no fallback from a pinned route');
      assert.equal(await page.getByText('cannot be reached').count(), 0, 'an upstream failure is not the server being unreachable');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
