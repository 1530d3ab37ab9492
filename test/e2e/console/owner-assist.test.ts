/**
 * The owner workspace's helpers around a chat, in headless Chromium against the real stack:
 * "Improve prompt" asks the model for clarification questions, sends the owner's answers, and
 * replaces the prompt only when the owner accepts the rewrite; a chat whose model call is refused
 * with 429 shows the retry notice with its attempt and wait before the turn completes; a workspace
 * over the download limit shows the API's 413 reason beside the download button.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { AGENT_MODEL, type AgentStack } from '../../support/agent-stack';
import { screenshot } from '../../support/browser';
import { startOwnerConsole, type OwnerConsole } from '../../support/owner-console';
import { scripted, sentMessages } from '../../support/scripted-conversation';

const REWRITTEN = 'Create README.md describing the widgets service for new contributors; done when the file exists.';

describe('console: improve prompt, retry notices, download limit (real stack, headless Chromium)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let page: Page;
  let errors: string[];
  let owner: OwnerConsole;

  before(async () => {
    owner = await startOwnerConsole({ env: { WORKSPACE_DOWNLOAD_MAX_MIB: '1' } }, '/chats/new');
    ({ stack, page, errors } = owner);
  });
  after(async () => {
    await owner?.close();
  });
  afterEach(() => assert.deepEqual(errors, [], 'no page errors'));

  it('improves the prompt with clarification questions; the rewrite replaces the text only once accepted', async () => {
    stack.upstream.enqueue(
      scripted.finalText(JSON.stringify({ questions: ['Who reads the README?', 'Which sections matter most?'] })),
      scripted.finalText(JSON.stringify({ prompt: REWRITTEN })),
    );
    await page.getByRole('heading', { name: 'Start a chat' }).waitFor();
    await page.getByLabel('Prompt', { exact: true }).fill('add a readme');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByRole('button', { name: 'Improve prompt' }).click();
    await page.getByLabel('Who reads the README?').fill('new contributors');
    await screenshot(page, 'owner-improve-prompt-questions');
    await page.getByRole('button', { name: 'Rewrite prompt' }).click();
    await page.getByLabel('Rewritten prompt').getByText(REWRITTEN).waitFor();
    assert.equal(await page.getByLabel('Prompt', { exact: true }).inputValue(), 'add a readme', 'nothing replaced before accepting');
    const rewriteCall = stack.upstream.chatRequests().at(-1)!;
    const sent = sentMessages(rewriteCall).map((m) => m.content ?? '').join('\n');
    assert.match(sent, /new contributors/, 'the answer went to the model');
    assert.doesNotMatch(sent, /Which sections matter most/, 'a blank answer is left out');
    await page.getByRole('button', { name: 'Use this prompt' }).click();
    assert.equal(await page.getByLabel('Prompt', { exact: true }).inputValue(), REWRITTEN);
  });

  it('shows a retry notice with its attempt and wait time, then the answer', async () => {
    stack.upstream.enqueue({ kind: 'status', status: 429, message: 'slow down', retryAfter: 1 }, scripted.finalText('Answered after the retry.'));
    await page.getByLabel('Driver').selectOption('builtin');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);
    const notice = page.locator('.note', { hasText: /^Retry 1: waiting/ });
    await notice.waitFor({ timeout: 120_000 });
    assert.match(await notice.innerText(), /^Retry 1: waiting \d+(\.\d)? s after HTTP 429/);
    await page.locator('.msg.assistant', { hasText: 'Answered after the retry.' }).waitFor({ timeout: 60_000 });
    await page.getByText('Turn 1 completed.').waitFor();
    await screenshot(page, 'owner-chat-retry');
  });

  it('shows the 413 reason when the workspace is over the download limit', async () => {
    stack.upstream.enqueue(scripted.toolCall('bash', { command: 'head -c 3000000 /dev/urandom > /workspace/big.bin' }, 'call_big'), scripted.finalText('Wrote a big file.'));
    await page.goto('/console/chats/new');
    await page.getByLabel('Prompt', { exact: true }).fill('Write a big file.');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByLabel('Driver').selectOption('builtin');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);
    await page.getByText('Turn 1 completed.').waitFor({ timeout: 120_000 });
    await page.getByRole('button', { name: 'Download workspace' }).click();
    const refusal = page.locator('.page-actions [role=alert]');
    await refusal.waitFor({ timeout: 60_000 });
    assert.match(await refusal.innerText(), /^The workspace is too large to download: .*\(413\)$/);
  });
});
