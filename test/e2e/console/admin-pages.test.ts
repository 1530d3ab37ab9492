/**
 * The admin console's pages against a real gateway (PostgreSQL, accounts, two fake upstreams) in
 * headless Chromium: every page renders what the server says (screenshots saved); a provider key
 * added is never shown back (page, API, logs); a bad value is refused in the browser before
 * sending, and the server's 400 lands next to the field it names; an ended session brings the
 * sign-in dialog over the page with the form kept and the call sent again after signing in; a
 * non-admin account sees no admin page and the admin API refuses it anyway; refused actions
 * (permanent deletion off, re-opening sign-up an active manifest closes) show the server's reason.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { screenshot } from '../../support/browser';
import { admin } from '../../support/admin';
import { startTestGateway } from '../../support/gateway';
import { ADMIN_EMAIL, openConsole, PASSWORD, startAdminConsoleStack, USER_EMAIL, type AdminConsoleStack } from '../../support/admin-console';

const PAGES: Array<[path: string, heading: string, shot: string]> = [
  ['admin', 'Admin', 'admin-overview'],
  ['admin/routing', 'Models and routes', 'admin-routing'],
  ['admin/providers', 'Providers', 'admin-providers'],
  ['admin/keys', 'Provider keys', 'admin-keys'],
  ['admin/visibility', 'Model visibility', 'admin-visibility'],
  ['admin/users', 'Users', 'admin-users'],
  ['admin/requests', 'Recent requests', 'admin-requests'],
  ['admin/auth-blocks', 'Sign-in blocks', 'admin-auth-blocks'],
  ['admin/settings', 'Runtime settings', 'admin-settings'],
  ['admin/health', 'Gateway health', 'admin-health'],
  ['admin/routing-status', 'Routing status', 'admin-routing-status'],
];

describe('admin console: pages', function () {
  this.timeout(120_000);
  let stack: AdminConsoleStack;

  before(async () => {
    stack = await startAdminConsoleStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('renders every admin page from the server without an error', async () => {
    const { page, errors, close } = await openConsole(stack, ADMIN_EMAIL);
    try {
      for (const [path, heading, shot] of PAGES) {
        await page.goto(`/console/${path}`);
        await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
        await page.getByText('Loading…').waitFor({ state: 'detached' });
        assert.equal(await page.locator('[role=alert]').count(), 0, `${path} shows no error`);
        await screenshot(page, shot);
      }
      await page.goto('/console/admin/routing');
      await page.getByRole('table', { name: 'Models and their routes' }).getByText('m#1').waitFor();
      await page.goto('/console/admin/users');
      await page.getByRole('table', { name: 'Users' }).getByText(USER_EMAIL).waitFor();
      await page.goto('/console/admin/health');
      await page.getByRole('table', { name: 'Endpoints taking traffic' }).getByText('route-b').waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('a provider key added is never shown back: only its prefix and fingerprint', async () => {
    const secret = 'sk-console-SECRET-0123456789abcdef';
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/keys');
    try {
      const form = page.getByRole('form', { name: 'Add a provider key' });
      await form.getByLabel('Provider').selectOption('route-b');
      await form.getByLabel('API key').fill(secret);
      await form.getByLabel('Label').fill('console key');
      await form.getByRole('button', { name: 'Add key' }).click();
      await form.getByRole('status').filter({ hasText: 'Key added' }).waitFor();
      assert.equal(await form.getByLabel('API key').inputValue(), '', 'the key input is emptied once saved');
      const row = page.getByRole('table', { name: 'Keys added at runtime' }).getByRole('row').filter({ hasText: 'console key' });
      await row.waitFor();
      await page.reload();
      await page.getByRole('table', { name: 'Keys added at runtime' }).getByText('console key').waitFor();
      assert.ok(!(await page.content()).includes(secret), 'the page never holds the key');
      const listing = await admin(stack.gw, 'GET', '/admin/provider-keys');
      assert.ok(!JSON.stringify(listing.body).includes(secret), 'the API never answers the key');
      assert.ok(!JSON.stringify(stack.gw.logs.lines).includes(secret), 'no log line holds the key');
    } finally {
      await close();
    }
  });

  it('checks a form before sending, and shows the server refusal next to the field it names', async () => {
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/providers');
    const posts: string[] = [];
    page.on('request', (r) => { if (r.method() === 'POST' && r.url().includes('/admin/provider-definitions')) posts.push(r.url()); });
    try {
      const form = page.getByRole('form', { name: 'Add a provider' });
      await form.getByLabel('Slug').fill('route-a');
      await form.getByLabel('Base URL').fill('not a url');
      await form.getByRole('button', { name: 'Add provider' }).click();
      await page.locator('#f-pd-base_url-error').filter({ hasText: 'Enter an http(s) URL.' }).waitFor();
      assert.deepEqual(posts, [], 'nothing was sent');

      await form.getByLabel('Base URL').fill('http://127.0.0.1:9/v1');
      await form.getByRole('button', { name: 'Add provider' }).click();
      const error = page.locator('#f-pd-slug-error');
      await error.waitFor();
      assert.match(await error.innerText(), /Invalid field 'slug': 'route-a' is owned by the registry file/);
      assert.equal(await form.getByLabel('Slug').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.locator('#f-pd-base_url-error').count(), 0, 'the fixed field shows no error');
      assert.equal(posts.length, 1);
      await screenshot(page, 'admin-providers-refused');
    } finally {
      await close();
    }
  });

  it('creates a runtime model after a verification that saves nothing; the server refusing a route field shows it on that field', async () => {
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/routing');
    try {
      const form = page.getByRole('form', { name: 'Create a runtime model' });
      await form.getByLabel('Model id').fill('rt-model');
      await form.getByLabel('Base URL').fill(stack.b.url);
      await form.getByLabel('Upstream model name').fill('rt');
      await form.getByLabel('Adapter kind').fill('no_such_kind');
      await form.getByRole('button', { name: 'Create model' }).click();
      await page.locator('#f-rm-kind-error').filter({ hasText: "unknown adapter kind 'no_such_kind'" }).waitFor();

      await form.getByLabel('Adapter kind').fill('');
      await form.getByRole('button', { name: 'Verify' }).click();
      await form.getByRole('status').filter({ hasText: 'Verification succeeded (not saved)' }).waitFor();
      const before = await admin<{ models: Array<{ id: string }> }>(stack.gw, 'GET', '/admin/routing');
      assert.ok(!before.body.models.some((m) => m.id === 'rt-model'), 'a verification saves nothing');

      await form.getByRole('button', { name: 'Create model' }).click();
      await form.getByRole('status').filter({ hasText: 'Model created.' }).waitFor();
      const row = page.getByRole('table', { name: 'Models and their routes' }).getByRole('row').filter({ hasText: 'rt-model' });
      await row.getByText('runtime').first().waitFor();
      const after = await admin<{ models: Array<{ id: string; source: string }> }>(stack.gw, 'GET', '/admin/routing');
      assert.equal(after.body.models.find((m) => m.id === 'rt-model')?.source, 'runtime');
    } finally {
      await close();
    }
  });

  it('shows the server reason when it refuses an action (permanent deletion turned off)', async () => {
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/users');
    page.on('dialog', (d) => void d.accept());
    try {
      const row = page.getByRole('table', { name: 'Users' }).getByRole('row').filter({ hasText: USER_EMAIL });
      await row.getByRole('button', { name: 'Delete permanently' }).click();
      await row.getByRole('alert').filter({ hasText: 'Permanent deletion is turned off (PERMANENT_DELETION_ENABLED=false) (403)' }).waitFor();
      assert.ok(await stack.t.db('users').where({ email: USER_EMAIL }).first(), 'the user is still there');
    } finally {
      await close();
    }
  });

  it('shows the refusal to re-open sign-up that the active distribution manifest closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'manifest-'));
    writeFileSync(join(dir, 'manifest.yaml'), 'schema_version: 1\nfeatures:\n  public_signup: false\n');
    const closed = await startTestGateway({
      db: stack.t.db,
      env: {
        CONSOLE_DIR: stack.consoleDir, USER_AUTH_ENABLED: 'true', COOKIE_SECURE: 'false', AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1',
        DISTRIBUTION_CONFIG_PATH: join(dir, 'manifest.yaml'), DISTRIBUTION_CONFIG_MODE: 'active', SIGNUP_ENABLED: 'false',
      },
    });
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/settings', closed.url);
    try {
      const row = page.getByRole('table', { name: /^Switches/ }).getByRole('row').filter({ hasText: 'signup_enabled' }).filter({ hasText: 'Public sign-up' });
      await row.getByRole('button', { name: 'Turn on' }).click();
      await row.getByRole('alert').filter({ hasText: 'the active distribution manifest disables public sign-up' }).waitFor();
      assert.match(await row.getByRole('alert').innerText(), /\(400\)/);
      await screenshot(page, 'admin-settings-refused');
    } finally {
      await close();
      await closed.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds a user and changes their permissions, and takes a provider out of rotation with a reason', async () => {
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/users');
    const permissions = async (): Promise<string[]> => (await admin<{ data: Array<{ permissions: string[] }> }>(stack.gw, 'GET', `/admin/users?email=${USER_EMAIL}`)).body.data[0]!.permissions;
    try {
      await page.getByRole('searchbox', { name: 'E-mail contains' }).fill('user@');
      await page.getByRole('button', { name: 'Search' }).click();
      const table = page.getByRole('table', { name: 'Users whose e-mail contains “user@”' });
      await table.getByText(USER_EMAIL).waitFor();
      assert.equal(await table.getByText(ADMIN_EMAIL).count(), 0);
      const row = table.getByRole('row').filter({ hasText: USER_EMAIL });
      await row.getByRole('checkbox', { name: 'agent.use' }).check();
      await row.getByRole('button', { name: 'Save access' }).click();
      await row.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      assert.deepEqual(await permissions(), ['agent.use']);
      await row.getByRole('checkbox', { name: 'agent.use' }).uncheck();
      await row.getByRole('button', { name: 'Save access' }).click();
      await row.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      assert.deepEqual(await permissions(), []);

      await page.goto('/console/admin/providers');
      const provider = page.getByRole('table', { name: 'Providers and rotation' }).getByRole('row').filter({ hasText: 'route-b' });
      await provider.getByRole('textbox', { name: 'Reason to take route-b out of rotation' }).fill('maintenance window');
      await provider.getByRole('button', { name: 'Take out of rotation' }).click();
      await provider.getByText('out of rotation maintenance window').waitFor();
      const routable = await admin<{ providers: Array<{ provider: string; disabled: boolean; reason: string | null }> }>(stack.gw, 'GET', '/admin/providers/routable');
      const b = routable.body.providers.find((p) => p.provider === 'route-b');
      assert.deepEqual([b?.disabled, b?.reason], [true, 'maintenance window']);
      await screenshot(page, 'admin-providers-rotation');
      await provider.getByRole('button', { name: 'Put back in rotation' }).click();
      await provider.getByText('in rotation', { exact: true }).waitFor();
    } finally {
      await close();
    }
  });

  it('an ended session brings the sign-in dialog over the page, keeps the form and sends the call after signing in', async () => {
    const { page, close } = await openConsole(stack, ADMIN_EMAIL, 'admin/keys');
    try {
      const form = page.getByRole('form', { name: 'Add a provider key' });
      await form.getByLabel('Provider').selectOption('route-a');
      await form.getByLabel('API key').fill('sk-after-relogin-000111222');
      await form.getByLabel('Label').fill('kept across sign-in');
      // The server ends the session: a suspension refuses the access token and revokes the refresh sessions.
      assert.equal((await admin(stack.gw, 'PATCH', `/admin/users/${stack.adminId}`, { suspended: true })).status, 200);
      await form.getByRole('button', { name: 'Add key' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('heading', { name: 'Your session expired' }).waitFor();
      assert.equal(await form.getByLabel('Label').inputValue(), 'kept across sign-in', 'the form is kept under the dialog');
      await screenshot(page, 'admin-session-expired');
      assert.equal((await admin(stack.gw, 'PATCH', `/admin/users/${stack.adminId}`, { suspended: false })).status, 200);
      await dialog.getByLabel('E-mail').fill(ADMIN_EMAIL);
      await dialog.getByLabel('Password').fill(PASSWORD);
      await dialog.getByRole('button', { name: 'Sign in' }).click();
      await form.getByRole('status').filter({ hasText: 'Key added' }).waitFor();
      assert.equal(await page.getByRole('dialog').count(), 0);
      await page.getByRole('table', { name: 'Keys added at runtime' }).getByText('kept across sign-in').waitFor();
    } finally {
      await close();
    }
  });

  it('a non-admin account sees no admin page, and the admin API refuses it anyway', async () => {
    const { page, errors, close } = await openConsole(stack, USER_EMAIL);
    try {
      await page.getByText('has no console access').waitFor();
      assert.equal(await page.getByRole('navigation').getByRole('link').count(), 0, 'no menu entry');
      await page.goto('/console/admin/routing');
      await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
      await page.getByText('This page needs the admin role.').waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
    for (const token of [stack.userSession.accessToken, stack.userKey]) {
      const refused = await admin(stack.gw, 'GET', '/admin/routing', undefined, token);
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      const change = await admin(stack.gw, 'PUT', `/admin/routing/weights/m/${'x'}`, { weight: 0 }, token);
      assert.equal(change.status, 403);
    }
  });
});
