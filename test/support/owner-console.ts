/**
 * The owner workspace's browser-test stack: the console built into a temporary directory, the
 * agent stack with one origin (the gateway serves the console and forwards the agent API), and a
 * headless Chromium page signed in as the stack's owner at `/console<path>`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildConsole } from '../../ops/build/console';
import { startAgentStack, type AgentStack, type AgentStackOptions } from './agent-stack';
import { launchBrowser, newPage, signIn } from './browser';

export interface OwnerConsole {
  stack: AgentStack;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Page errors seen so far (a test expects none). */
  errors: string[];
  close(): Promise<void>;
}

/** Starts the stack and signs the owner in at `/console<path>`. */
export async function startOwnerConsole(options: AgentStackOptions, path = '/'): Promise<OwnerConsole> {
  const consoleDir = mkdtempSync(join(tmpdir(), 'console-owner-'));
  await buildConsole({ outDir: consoleDir });
  const stack = await startAgentStack({ ...options, oneOrigin: true, gatewayEnv: { ...options.gatewayEnv, CONSOLE_DIR: consoleDir } });
  const browser = await launchBrowser();
  const { context, page, errors } = await newPage(browser, stack.gateway.url);
  await page.goto(`/console${path}`);
  await signIn(page, `owner-${stack.hostId}@example.com`, 'correct horse battery');
  return {
    stack, browser, context, page, errors,
    close: async () => {
      await browser.close();
      await stack.close();
      rmSync(consoleDir, { recursive: true, force: true });
    },
  };
}
