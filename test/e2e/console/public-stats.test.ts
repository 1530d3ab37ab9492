/**
 * The public stats page in headless Chromium against real gateways and PostgreSQL
 * (docs/public-stats.md): `/stats` opens `/console/stats` without signing in and shows the newest
 * snapshot (withheld figures said as such); a gateway that does not publish stats says so.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { windowOf } from '../../../gateway/ops/public-stats/content';
import { takePublicStatsSnapshot } from '../../../gateway/ops/public-stats/snapshot';
import { buildConsole } from '../../../ops/build/console';
import { launchBrowser, newPage, screenshot } from '../../support/browser';
import { freshDatabase, type TestDatabase } from '../../support/db';
import { startTestGateway, type TestGateway } from '../../support/gateway';

describe('console: public stats page (Chromium, gateway, PostgreSQL)', function () {
  this.timeout(90_000);
  let dir: string;
  let t: TestDatabase;
  let published: TestGateway;
  let unpublished: TestGateway;
  let browser: Browser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-stats-'));
    await buildConsole({ outDir: join(dir, 'console') });
    t = await freshDatabase();
    const ids = (await t.db('users').insert(['a', 'b', 'c'].map((n) => ({ email: `${n}@example.com` }))).returning<Array<{ id: string }>>('id')).map((r) => r.id);
    const lastWeek = new Date(windowOf(new Date(), 26).end.getTime() - 2 * 86_400_000);
    await t.db('api_logs').insert([
      ...ids.map((id, i) => ({ request_id: `r${i}`, created_at: lastWeek, user_id: id, model: 'popular-model', surface: 'chat', status: 200, prompt_tokens: 1000, completion_tokens: 100 })),
      { request_id: 'rx', created_at: lastWeek, user_id: ids[0], model: 'niche-model', surface: 'chat', status: 200, prompt_tokens: 5, completion_tokens: 5 },
    ]);
    await takePublicStatsSnapshot(t.db, { weeks: 26, languages: false });
    writeFileSync(join(dir, 'manifest.yaml'), 'schema_version: 1\nfeatures: { public_stats: true }\n');
    const env = { CONSOLE_DIR: join(dir, 'console'), USER_AUTH_ENABLED: 'true' };
    published = await startTestGateway({ db: t.db, env: { ...env, DISTRIBUTION_CONFIG_PATH: join(dir, 'manifest.yaml'), DISTRIBUTION_CONFIG_MODE: 'active' } });
    unpublished = await startTestGateway({ db: t.db, env });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await published?.close();
    await unpublished?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('/stats shows the newest snapshot without signing in, withheld items counted, not named', async () => {
    const { context, page, errors } = await newPage(browser, published.url);
    try {
      await page.goto('/stats');
      await page.getByRole('heading', { name: 'Usage statistics' }).waitFor();
      assert.match(page.url(), /\/console\/stats$/);
      assert.equal(await page.getByLabel('E-mail').count(), 0, 'no sign-in form on the public page');
      const models = page.getByRole('table', { name: 'Models' });
      assert.match(await models.innerText(), /popular-model\s+3\s+3\s+3,000\s+300/);
      assert.doesNotMatch(await page.locator('main').innerText(), /niche-model/);
      assert.match(await page.locator('main').innerText(), /1 more withheld \(fewer than three accounts each\)/);
      const weekly = page.getByRole('table', { name: 'Weekly' });
      assert.equal(await weekly.locator('tbody tr').count(), 26);
      assert.match(await weekly.locator('tbody tr').first().innerText(), /withheld/);
      await screenshot(page, 'public-stats');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('says so when the deployment does not publish stats', async () => {
    const { context, page, errors } = await newPage(browser, unpublished.url);
    try {
      await page.goto('/stats');
      await page.getByText(/Public stats are not published here/).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
