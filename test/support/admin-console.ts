/**
 * The stack of the admin console's browser tests: the console built into a temporary directory,
 * a real gateway serving it (PostgreSQL, user accounts on, `ADMIN_EMAILS` naming the admin, the
 * static `ADMIN_TOKEN` for the test's own checks), one model `m` with two routes on two fake
 * upstreams, an administrator and a plain user with an API key, all made through the gateway's
 * own endpoints.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../ops/build/console';
import { seededRng } from '../../gateway/routing/weighted-order';
import { createKey, signUpAndLogIn, type Session } from './accounts';
import { ADMIN_TOKEN, admin } from './admin';
import { launchBrowser, newPage, signIn } from './browser';
import { freshDatabase, type TestDatabase } from './db';
import { closeAll, startUpstreamPair, type FakeUpstream } from './fake-upstream';
import { chatModelYaml, startTestGateway, type TestGateway } from './gateway';

export const ADMIN_EMAIL = 'admin@example.com';
export const USER_EMAIL = 'user@example.com';
export const PASSWORD = 'correct horse battery';

export interface AdminConsoleStack {
  gw: TestGateway;
  t: TestDatabase;
  a: FakeUpstream;
  b: FakeUpstream;
  browser: Browser;
  /** The console build the gateway serves (`CONSOLE_DIR`), for a second gateway. */
  consoleDir: string;
  adminSession: Session;
  adminId: number;
  userSession: Session;
  /** The plain user's API key (for inference). */
  userKey: string;
  close(): Promise<void>;
}

/** Starts everything; `close` stops it and removes the build. */
export async function startAdminConsoleStack(): Promise<AdminConsoleStack> {
  const dir = mkdtempSync(join(tmpdir(), 'admin-console-'));
  await buildConsole({ outDir: join(dir, 'console') });
  const t = await freshDatabase();
  const [a, b] = await startUpstreamPair();
  const modelsYaml = `models:\n${chatModelYaml('m', [
    `{ kind: generic_compat, base_url: "${a.url}", api_key: file-key-route-a-0001, provider: route-a }`,
    `{ kind: generic_compat, base_url: "${b.url}", provider: route-b }`,
  ])}`;
  const gw = await startTestGateway({
    modelsYaml, db: t.db, rng: seededRng(7),
    env: {
      CONSOLE_DIR: join(dir, 'console'), ADMIN_TOKEN, USER_AUTH_ENABLED: 'true', COOKIE_SECURE: 'false',
      ADMIN_EMAILS: ADMIN_EMAIL, AUTH_FAILURE_BLOCK_EXEMPT_IPS: '127.0.0.1',
      // Tests speak for other sources with X-Forwarded-For (the browser, without it, is 127.0.0.1: exempt).
      TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: '127.0.0.1/32', AUTH_FAILURE_BLOCK_THRESHOLD: '3',
    },
  });
  const adminSession = await signUpAndLogIn(gw.url, t.db, ADMIN_EMAIL, PASSWORD);
  const me = (await (await fetch(`${gw.url}/auth/me`, { headers: { authorization: `Bearer ${adminSession.accessToken}` } })).json()) as { id: number; role: string };
  assert.equal(me.role, 'admin', 'ADMIN_EMAILS made the account an administrator');
  const userSession = await signUpAndLogIn(gw.url, t.db, USER_EMAIL, PASSWORD);
  const userKey = await createKey(gw.url, userSession);
  const browser = await launchBrowser();
  return {
    gw, t, a, b, browser, consoleDir: join(dir, 'console'), adminSession, adminId: me.id, userSession, userKey,
    close: async () => {
      await browser.close();
      await closeAll(gw, a, b);
      await t.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh browser page signed in as `email`, at `/console/<path>` of `baseUrl` (the stack's gateway by default); `errors` collects page errors. */
export async function openConsole(stack: AdminConsoleStack, email: string, path = '', baseUrl = stack.gw.url): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const { context, page, errors } = await newPage(stack.browser, baseUrl);
  await page.goto('/console/');
  await signIn(page, email, PASSWORD);
  if (path) await page.goto(`/console/${path}`);
  return { page, errors, close: () => context.close() };
}

/** The endpoint id of `m`'s route to `provider` (read with the admin token). */
export async function endpointOf(gw: TestGateway, provider: string): Promise<string> {
  const listing = await admin<{ routes: Array<{ provider: string; endpoint_id: string }> }>(gw, 'GET', '/admin/routing/provider-routes/m');
  const route = listing.body.routes.find((r) => r.provider === provider);
  assert.ok(route, `m has a route to ${provider}`);
  return route.endpoint_id;
}

/** Sends `n` chat requests to `m` with an API key; each must succeed. */
export async function sendChats(gw: TestGateway, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `hello ${i}` }] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
  }
}
