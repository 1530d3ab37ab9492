/**
 * The owner workspace on the demo model (docs/demo-model.md), in headless Chromium against the real
 * stack: the start form marks the demo model; an owner starts a Claude Code chat that writes a file
 * (the Write and Bash calls stream in, each folded with its result), asks in a follow-up to be
 * asked, answers the demo's native question in place (the demo's reply quotes the answer), and
 * downloads the workspace holding the file.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startDemoUpstream, type DemoUpstream } from '../../../ops/dev/demo-upstream';
import { AGENT_MODEL } from '../../support/agent-stack';
import { screenshot } from '../../support/browser';
import { startOwnerConsole, type OwnerConsole } from '../../support/owner-console';

describe('console: an owner chat on the demo model (real stack, headless Chromium)', function () {
  this.timeout(600_000);
  let demo: DemoUpstream;
  let page: Page;
  let errors: string[];
  let owner: OwnerConsole;

  before(async () => {
    demo = await startDemoUpstream(0);
    owner = await startOwnerConsole({
      upstreamUrl: demo.url,
      modelFields: 'demo: true, supports_tools: true, context_length: 200000, max_output_length: 32000, supported_params: [temperature, top_p, max_tokens, tools, tool_choice, stop, parallel_tool_calls]',
    }, '/chats/new');
    ({ page, errors } = owner);
  });
  after(async () => {
    await owner?.close();
    await demo?.close();
  });
  afterEach(() => assert.deepEqual(errors, [], 'no page errors'));

  it('writes a file, answers the native question in place, and downloads the workspace holding the file', async () => {
    await page.getByRole('heading', { name: 'Start a chat' }).waitFor();
    const option = page.getByLabel('Model').locator('option', { hasText: AGENT_MODEL });
    assert.match(await option.innerText(), /\[demo\]$/, 'the demo model is marked');
    await page.getByText('Demo models answer from a script').waitFor();
    await page.getByLabel('Prompt', { exact: true }).fill('Create notes.txt saying hello from the console');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByLabel('Driver').selectOption('claude-code');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);

    await page.locator('details.tool[data-tool="Write"] .badge', { hasText: 'done' }).waitFor({ timeout: 240_000 });
    const bash = page.locator('details.tool[data-tool="Bash"]');
    await bash.locator('.badge', { hasText: 'done' }).waitFor({ timeout: 120_000 });
    await bash.locator('summary').click();
    assert.match(await bash.innerText(), /hello from the console/, 'the shell result shows the file');
    await page.getByText('Turn 1 completed.').waitFor({ timeout: 120_000 });

    await page.getByLabel('Follow-up').fill('Now ask me a question.');
    await page.getByRole('button', { name: 'Send' }).click();
    const question = page.locator('form.question');
    await question.getByText('Which colour do you like best?').waitFor({ timeout: 180_000 });
    await question.getByLabel('Green').check();
    await question.getByRole('button', { name: 'Send answer' }).click();
    await question.locator('.badge', { hasText: 'answered' }).waitFor();
    await page.getByText('Turn 2 completed.').waitFor({ timeout: 120_000 });
    await page.locator('.msg.assistant', { hasText: 'Green' }).last().waitFor();
    await screenshot(page, 'owner-demo-chat');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download workspace' }).click()]);
    const dir = mkdtempSync(join(tmpdir(), 'owner-archive-'));
    try {
      const archive = join(dir, download.suggestedFilename());
      await download.saveAs(archive);
      assert.equal(execFileSync('tar', ['-xOzf', archive, 'workspace/notes.txt'], { encoding: 'utf8' }).trim(), 'hello from the console');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
