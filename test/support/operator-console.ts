/**
 * The agent operator console on the real stack, for browser tests (test/e2e/console/operator-*):
 * the console built into a temporary directory, a gateway serving it (`CONSOLE_DIR`) on the agent
 * stack's database, an administrator account signed up through the gateway and given the admin
 * role by the admin API (the admin role implies `agent.admin`), and a signed-in Chromium page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../ops/build/console';
import { signUpAndLogIn } from './accounts';
import { ADMIN_TOKEN } from './admin';
import type { AgentStack } from './agent-stack';
import { TEST_JWT_SECRET } from './api';
import { launchBrowser, newPage, signIn } from './browser';
import { startTestGateway, type TestGateway } from './gateway';

export const OPERATOR_PASSWORD = 'operator console password';

export interface OperatorConsole {
  gateway: TestGateway;
  browser: Browser;
  page: Page;
  /** Page errors seen so far (a test fails on any). */
  errors: string[];
  email: string;
  close(): Promise<void>;
}

export async function startOperatorConsole(stack: AgentStack): Promise<OperatorConsole> {
  const dir = mkdtempSync(join(tmpdir(), 'operator-console-'));
  await buildConsole({ outDir: join(dir, 'console') });
  const gateway = await startTestGateway({
    db: stack.t.db,
    env: {
      CONSOLE_DIR: join(dir, 'console'), USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET,
      SIGNUP_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false',
      // One origin (docs/one-origin.md): the console's /admin/agent/* calls reach the stack's API through this gateway.
      GATEWAY_AGENT_API_URL: stack.api.url,
    },
  });
  const email = `operator-${stack.hostId}@example.com`;
  await signUpAndLogIn(gateway.url, stack.t.db, email, OPERATOR_PASSWORD);
  const user = await stack.t.db('users').whereRaw('lower(email) = lower(?)', [email]).first<{ id: string }>('id');
  const promoted = await fetch(`${gateway.url}/admin/users/${user.id}`, {
    method: 'PATCH', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ role: 'admin' }),
  });
  if (!promoted.ok) throw new Error(`making the operator an admin failed: ${promoted.status} ${await promoted.text()}`);

  const browser = await launchBrowser();
  const { page, errors } = await newPage(browser, gateway.url);
  await page.goto('/console/');
  await signIn(page, email, OPERATOR_PASSWORD);
  return {
    gateway, browser, page, errors, email,
    close: async () => {
      await browser.close();
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
