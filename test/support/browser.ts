/**
 * A real browser for console tests: Debian's `chromium` driven by `playwright-core` through
 * `executablePath` (no browser download). `CHROMIUM_PATH` overrides the binary. Screenshots go to
 * `test-artifacts/screenshots/` (git-ignored), kept after the run as test artifacts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = join(__dirname, '..', '..', 'test-artifacts', 'screenshots');

/** Launches headless Chromium. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A fresh browser context (own cookies and storage) with a page, failing the test on page errors. */
export async function newPage(browser: Browser, baseURL: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  return { context, page, errors };
}

/** Saves a full-page screenshot named `<name>.png` as a test artifact. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name.replace(/[^a-z0-9-]/gi, '-')}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Signs in through the console's form. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
