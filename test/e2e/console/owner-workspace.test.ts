/**
 * The owner workspace in headless Chromium against the real stack (PostgreSQL, Temporal, Docker,
 * the API, a host runner, the gateway serving a fresh console build, a scripted fake model on
 * loopback): an owner starts a chat in the console (Claude Code driver), sees the tool call and its
 * result stream in, answers the CLI's native question in place, and downloads the workspace (the
 * archive holds the file the agent wrote); sends a follow-up turn; cancels a running turn; filters
 * temporary chats; reads the usage page in both windows; and sees form validation and a server
 * refusal next to the form; and an answer to a question already answered elsewhere shows the
 * API's 409. Screenshots of each page are saved as artifacts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { newId } from '../../../agent/jobs/job-store';
import { AGENT_MODEL, ownerCall, type AgentStack } from '../../support/agent-stack';
import { screenshot } from '../../support/browser';
import { startOwnerConsole, type OwnerConsole } from '../../support/owner-console';
import type { Behaviour, RecordedRequest } from '../../support/fake-upstream';
import { scripted } from '../../support/scripted-conversation';

type Json = Record<string, unknown>;

const FINAL = 'All done from the fake model.';
const QUESTION = 'Which database should the service use?';
const FILE_TEXT = 'written by the agent from the console';

function offered(request: RecordedRequest): string[] {
  const tools = ((request.body as Json | undefined)?.tools ?? []) as Json[];
  return tools.map((t) => (t.function as Json | undefined)?.name).filter((name): name is string => typeof name === 'string');
}

/** The final answer, streamed when the request asked for it. */
const finalText: Behaviour = { kind: 'dynamic', choose: (r) => ((r.body as Json | undefined)?.stream === true ? { kind: 'sse', pieces: [FINAL] } : { kind: 'json', content: FINAL }) };

/** A reply naming a tool Claude Code offered (a 400 saying so when it did not offer it). */
function claudeTool(name: string, args: Json, id: string): Behaviour {
  return {
    kind: 'dynamic',
    choose: (r) => (offered(r).includes(name) ? { kind: 'tool_call', id, name, arguments: args } : { kind: 'status', status: 400, message: `no ${name} tool offered: ${offered(r).join(', ')}` }),
  };
}

const writeFile = claudeTool('Write', { file_path: '/workspace/notes/hello.txt', content: `${FILE_TEXT}\n` }, 'toolu_write_1');
const askDatabase = claudeTool('AskUserQuestion', {
  questions: [{ question: QUESTION, header: 'Database', multiSelect: false, options: [{ label: 'Postgres', description: 'Relational' }, { label: 'SQLite', description: 'Embedded' }] }],
}, 'toolu_ask_1');

describe('console: the owner workspace (real stack, headless Chromium)', function () {
  this.timeout(600_000);
  let stack: AgentStack;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  let owner: OwnerConsole;
  let chatUrl: string;

  before(async () => {
    owner = await startOwnerConsole({ modelFields: 'supports_tools: true, supported_params: [temperature, max_tokens, parallel_tool_calls]' });
    ({ stack, context, page, errors } = owner);
  });
  after(async () => {
    await owner?.close();
  });
  afterEach(() => assert.deepEqual(errors, [], 'no page errors'));

  it('validates the start form before sending, and shows the server refusal of a repository that is not entitled', async () => {
    await page.getByRole('link', { name: 'Start a chat' }).first().click();
    await page.getByRole('heading', { name: 'Start a chat' }).waitFor();
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.getByText('Write what the agent should do.').waitFor();
    await page.getByLabel('A repository').check();
    await page.getByLabel('Prompt').fill('Add a README');
    await page.getByLabel('Repository', { exact: true }).fill('not a repo');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.getByText('A repository is owner/name').waitFor();
    assert.equal(await page.getByLabel('Repository', { exact: true }).getAttribute('aria-invalid'), 'true');
    await screenshot(page, 'owner-start-chat-validation');
    // A well-formed repository the owner is not entitled to: the API's 403 shows beside the form.
    await page.getByLabel('Repository', { exact: true }).fill('acme/widgets');
    await page.getByRole('button', { name: 'Start chat' }).click();
    const refusal = page.locator('.submit-row .error');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /acme\/widgets|repositor/i);
    assert.equal(await stack.t.db('agent_jobs').count<[{ count: string }]>('* as count').then((r) => Number(r[0]?.count)), 0, 'nothing was created');
  });

  it('starts a chat, streams the tool call and its result, answers the native question in place, then downloads the workspace', async () => {
    stack.upstream.enqueue(writeFile, askDatabase, finalText);
    await page.goto('/console/chats/new');
    await page.getByLabel('Prompt').fill('Write the note, then ask me which database to use.');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByLabel('Driver').selectOption('claude-code');
    await page.getByLabel('Temporary workspace').check();
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);
    chatUrl = new URL(page.url()).pathname;

    // The tool call and its result arrive while the turn still waits for the owner: they streamed in.
    const tool = page.locator('details.tool[data-tool="Write"]');
    await tool.locator('.badge', { hasText: 'done' }).waitFor({ timeout: 240_000 });
    const question = page.locator('form.question');
    await question.getByText(QUESTION).waitFor({ timeout: 120_000 });
    assert.equal(await question.locator('.badge').innerText(), 'pending');
    assert.equal(await page.getByText('Turn 1 completed.').count(), 0, 'the turn is still running');
    await tool.locator('summary').click();
    assert.match(await tool.innerText(), /notes\/hello\.txt/);
    await screenshot(page, 'owner-chat-question');

    await question.getByLabel('SQLite').check();
    await question.getByRole('button', { name: 'Send answer' }).click();
    await question.locator('.badge', { hasText: 'answered' }).waitFor();
    await page.getByText('Turn 1 completed.').waitFor({ timeout: 120_000 });
    await page.locator('.chat-meta .badge', { hasText: 'Idle' }).waitFor({ timeout: 30_000 });
    await page.locator('.msg.assistant', { hasText: FINAL }).first().waitFor();
    const answered = stack.upstream.chatRequests().some((r) => r.rawBody.includes('SQLite'));
    assert.ok(answered, 'the model received the answer given in the console');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download workspace' }).click()]);
    const dir = mkdtempSync(join(tmpdir(), 'owner-archive-'));
    try {
      const archive = join(dir, download.suggestedFilename());
      await download.saveAs(archive);
      assert.match(download.suggestedFilename(), /^job_.*-workspace\.tar\.gz$/);
      const entries = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n');
      const entry = entries.find((e) => e.replace(/^\.\//, '') === 'workspace/notes/hello.txt');
      assert.ok(entry, `the archive holds workspace/notes/hello.txt (has ${entries.filter(Boolean).length} entries)`);
      assert.equal(execFileSync('tar', ['-xOzf', archive, entry], { encoding: 'utf8' }).trim(), FILE_TEXT);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await page.getByText(/Downloaded .* KiB\./).waitFor();
    await screenshot(page, 'owner-chat');
  });

  it('sends a follow-up turn from the composer and streams it into the same chat', async () => {
    stack.upstream.enqueue(finalText);
    await page.getByLabel('Follow-up').fill('Now say done again.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Turn 2 queued.').waitFor();
    await page.locator('.msg.owner', { hasText: 'Now say done again.' }).waitFor({ timeout: 30_000 });
    await page.getByText('Turn 2 completed.').waitFor({ timeout: 120_000 });
    assert.equal(await page.locator('.msg.assistant', { hasText: FINAL }).count(), 2);
  });

  it('cancels a running turn (a long command of the built-in driver) and shows the chat idle again', async () => {
    stack.upstream.enqueue(scripted.toolCall('bash', { command: 'sleep 300' }, 'call_sleep'));
    await page.goto('/console/chats/new');
    await page.getByLabel('Prompt').fill('Sleep for a long time.');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByLabel('Driver').selectOption('builtin');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);
    await page.locator('details.tool[data-tool="bash"] .badge', { hasText: 'running…' }).waitFor({ timeout: 180_000 });
    await page.getByRole('button', { name: 'Cancel turn 1' }).click({ timeout: 30_000 });
    await page.getByText('Cancel requested for turn 1.').waitFor();
    await page.getByText(/Turn 1 cancelled/).waitFor({ timeout: 120_000 });
    await page.locator('.chat-meta .badge', { hasText: 'Idle' }).waitFor({ timeout: 30_000 });
    await screenshot(page, 'owner-chat-cancelled');
  });

  it('lists chats with the temporary filter', async () => {
    const owner = await stack.t.db('users').whereRaw('lower(email) = lower(?)', [`owner-${stack.hostId}@example.com`]).first<{ id: number }>('id');
    await stack.t.db('agent_jobs').insert({ job_id: newId('job'), owner_id: owner.id, title: 'Repository chat', model: AGENT_MODEL, repo: 'acme/widgets' });
    await page.getByRole('link', { name: 'Chats', exact: true }).click();
    const rows = page.locator('table tbody tr');
    await page.getByRole('link', { name: 'Repository chat' }).waitFor();
    assert.equal(await rows.count(), 3);
    await screenshot(page, 'owner-chats');
    await page.getByLabel('Show').selectOption('temporary');
    await page.waitForURL(/show=temporary/);
    await page.getByRole('link', { name: 'Repository chat' }).waitFor({ state: 'detached' });
    await rows.nth(1).waitFor();
    assert.equal(await rows.count(), 2);
    assert.deepEqual(await page.locator('table tbody tr td:nth-child(3)').allInnerTexts(), ['temporary', 'temporary']);
    await page.getByLabel('Show').selectOption('repository');
    await page.getByRole('link', { name: 'Repository chat' }).waitFor();
    assert.equal(await rows.count(), 1);
    assert.equal(await page.locator('table caption').innerText(), 'Chats on a repository');
  });

  it('shows usage for 7 and 30 UTC days', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    const byModel = page.locator('table', { has: page.locator('caption', { hasText: 'Runs by model' }) });
    await byModel.locator('tbody tr', { hasText: AGENT_MODEL }).waitFor();
    assert.equal(await page.getByRole('button', { name: '7 days' }).getAttribute('aria-pressed'), 'true');
    assert.equal(await page.locator('table', { has: page.locator('caption', { hasText: 'Runs by day' }) }).locator('tbody tr').count(), 7);
    const containers = page.locator('table', { has: page.locator('caption', { hasText: 'Your sandboxes' }) }).locator('tbody tr');
    assert.ok(await containers.count() >= 1);
    await screenshot(page, 'owner-usage');
    await page.getByRole('button', { name: '30 days' }).click();
    await page.waitForURL(/days=30/);
    await page.locator('table', { has: page.locator('caption', { hasText: 'Runs by day' }) }).locator('tbody tr').nth(29).waitFor();
    assert.equal(await page.locator('table', { has: page.locator('caption', { hasText: 'Runs by day' }) }).locator('tbody tr').count(), 30);
    assert.equal(await page.getByRole('button', { name: '30 days' }).getAttribute('aria-pressed'), 'true');
    assert.ok(chatUrl);
  });

  it('the Security page lists each support sign-in as the owner: who, why, until when', async () => {
    const db = stack.t.db;
    const ownerRow = await db('users').where({ email: `owner-${stack.hostId}@example.com` }).first<{ id: string }>('id');
    const [adminRow] = await db('users').insert({ email: 'support-agent@example.com', password_hash: 'x', role: 'admin' }).returning<Array<{ id: string }>>('id');
    await db('impersonations').insert({
      user_id: ownerRow.id, admin_user_id: adminRow!.id, admin_session: '2b3c4d5e-1234-4abc-9def-0123456789ab', reason: 'ticket 4711',
      expires_at: db.raw("now() + interval '15 minutes'"),
    });
    await page.getByRole('link', { name: 'Security' }).first().click();
    const table = page.getByRole('table', { name: 'Sign-ins as you by support' });
    await table.getByRole('cell', { name: 'support-agent@example.com' }).waitFor();
    await table.getByRole('cell', { name: 'ticket 4711' }).waitFor();
  });

  it('shows the API refusal when a question was already answered elsewhere (the page still showed it pending)', async () => {
    stack.upstream.enqueue(askDatabase, finalText);
    await page.goto('/console/chats/new');
    await page.getByLabel('Prompt').fill('Ask me which database to use.');
    await page.getByLabel('Model').selectOption(AGENT_MODEL);
    await page.getByLabel('Driver').selectOption('claude-code');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.waitForURL(/\/console\/chats\/job_/);
    const jobId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1)!);
    const question = page.locator('form.question');
    await question.locator('.badge', { hasText: 'pending' }).waitFor({ timeout: 240_000 });
    // The page's re-reads of the question list fail from now on (it keeps the last good list: pending).
    await context.route('**/v1/agent/jobs/*/questions', (route) => route.fulfill({ status: 500, json: { error: { message: 'test: list unavailable' } } }));
    const [pending] = ((await (await ownerCall(stack, 'GET', `/v1/agent/jobs/${jobId}/questions?pending=true`)).json()) as { questions: Array<{ attempt_id: string; request_id: string }> }).questions;
    assert.ok(pending, 'the API lists the question as pending');
    const elsewhere = await ownerCall(stack, 'POST', `/v1/agent/jobs/${jobId}/attempts/${pending.attempt_id}/questions/${encodeURIComponent(pending.request_id)}/answer`, { answers: { [QUESTION]: ['Postgres'] } });
    assert.equal(elsewhere.status, 200, await elsewhere.clone().text());
    await page.getByText('Notice: question_answered').waitFor({ timeout: 60_000 });
    assert.equal(await question.locator('.badge').innerText(), 'pending', 'the page still shows the question pending');
    await question.getByLabel('SQLite').check();
    await question.getByRole('button', { name: 'Send answer' }).click();
    const refusal = question.locator('[role=alert]');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /(already answered|not current).*\(409\)$/, 'stale: answered, or its attempt already ended');
    assert.equal(await question.getByRole('button', { name: 'Send answer' }).count(), 0, 'no second try offered');
    await context.unroute('**/v1/agent/jobs/*/questions');
    await page.getByText('Turn 1 completed.').waitFor({ timeout: 120_000 });
    await page.reload();
    await question.locator('.badge', { hasText: 'answered' }).waitFor();
    assert.match(await question.innerText(), /Answered: Postgres/);
  });
});
