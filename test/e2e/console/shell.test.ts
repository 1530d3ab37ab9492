/**
 * The console shell in headless Chromium against a real gateway and PostgreSQL: the site
 * configuration gate (error with retry, 3 s budget), sign-in, what each account is offered, the
 * expired-session dialog that keeps the page, sign-out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../ops/build/console';
import { freeLoopbackPort } from '../../../ops/dev/free-port';
import { signUpAndLogIn } from '../../support/accounts';
import { launchBrowser, newPage, screenshot, signIn } from '../../support/browser';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { startTestGateway, type TestGateway } from '../../support/gateway';

const PASSWORD = 'correct horse battery';

describe('console shell (Chromium, gateway, PostgreSQL)', function () {
  this.timeout(90_000);
  let dir: string;
  let t: TestDatabase;
  let gw: TestGateway;
  let broken: TestGateway;
  let apiDown: TestGateway;
  let browser: Browser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-shell-'));
    await buildConsole({ outDir: join(dir, 'console') });
    t = await freshDatabase();
    const env = { CONSOLE_DIR: join(dir, 'console'), USER_AUTH_ENABLED: 'true', COOKIE_SECURE: 'false', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1' };
    gw = await startTestGateway({ db: t.db, env });
    broken = await startTestGateway({ db: t.db, env: { ...env, DISTRIBUTION_CONFIG_MODE: 'bogus' } });
    // One origin whose control-plane API is down: nothing listens on the port it forwards to.
    apiDown = await startTestGateway({ db: t.db, env: { ...env, GATEWAY_AGENT_API_URL: `http://127.0.0.1:${await freeLoopbackPort()}` } });
    await signUpAndLogIn(gw.url, t.db, 'owner@example.com', PASSWORD);
    await signUpAndLogIn(gw.url, t.db, 'boss@example.com', PASSWORD);
    await t.db('users').where({ email: 'owner@example.com' }).update({ permissions: ['agent.use'] });
    await t.db('users').where({ email: 'boss@example.com' }).update({ role: 'admin' });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await broken?.close();
    await apiDown?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a misconfigured site shows a configuration error with a retry button, not a guessed branding', async () => {
    const { context, page, errors } = await newPage(browser, broken.url);
    await page.goto('/console/');
    await page.getByRole('heading', { name: 'Configuration error' }).waitFor();
    assert.match(await page.getByRole('alert').innerText(), /site configuration answered 503: .*DISTRIBUTION_CONFIG_MODE must be exactly/);
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('heading', { name: 'Configuration error' }).waitFor();
    assert.equal(await page.getByLabel('E-mail').count(), 0, 'no sign-in form without a site configuration');
    await screenshot(page, 'console-config-error');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('a site configuration slower than 3 s is an error; Retry loads the console when it answers', async () => {
    const { context, page } = await newPage(browser, gw.url);
    let slow = true;
    // Fault injection in the browser: the first answer is held past the console's 3 s budget.
    await page.route('**/site-config', async (route) => {
      if (slow) {
        slow = false;
        await new Promise((resolve) => setTimeout(resolve, 3_500));
      }
      await route.continue();
    });
    await page.goto('/console/');
    await page.getByText('did not answer within 3 seconds').waitFor();
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.getByLabel('E-mail').waitFor();
    await context.close();
  });

  it('signs in (a wrong password shows the server\'s message), offers each account what it may use, signs out', async () => {
    const { context, page, errors } = await newPage(browser, gw.url);
    await page.goto('/console/');
    await page.getByLabel('E-mail').fill('owner@example.com');
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Invalid e-mail or password').waitFor();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/console/chats');
    const nav = page.getByRole('navigation', { name: 'Console' });
    assert.equal(await nav.getByRole('link', { name: 'Chats' }).count(), 1);
    assert.equal(await nav.getByRole('heading', { name: 'Admin' }).count(), 0, 'an owner is not offered the admin console');
    await page.goto('/console/admin');
    await page.getByText('This page needs the admin role').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('E-mail').waitFor();
    assert.equal(await page.evaluate<number>('sessionStorage.length'), 0, 'the stored session is gone');
    assert.deepEqual(errors, []);
    await context.close();
  });

  it('an admin lands on the admin console; a reload keeps the session and the page', async () => {
    const { context, page } = await newPage(browser, gw.url);
    await page.goto('/console/');
    await signIn(page, 'boss@example.com', PASSWORD);
    await page.waitForURL('**/console/admin');
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.match(page.url(), /\/console\/admin$/);
    await screenshot(page, 'console-admin-home');
    await context.close();
  });

  it('while the agent API is down the console says so, with the gateway\'s reason, and every form is read-only', async () => {
    const { context, page } = await newPage(browser, apiDown.url);
    await page.goto('/console/');
    await signIn(page, 'boss@example.com', PASSWORD);
    await page.goto('/console/admin/agent/hosts');
    const banner = page.getByRole('status').filter({ hasText: 'The agent API is not answering' });
    await banner.waitFor();
    assert.match(await banner.innerText(), /agent API.*GATEWAY_AGENT_API_URL.*read-only/s, 'the reason is the gateway\'s answer naming the agent API');
    await screenshot(page, 'console-api-down');
    await page.goto('/console/admin/agent/settings');
    await banner.waitFor();
    const submits = page.locator('button[type=submit]');
    for (let i = 0; i < await submits.count(); i++) assert.equal(await submits.nth(i).isDisabled(), true, 'every form is read-only');
    await context.close();
  });
});
