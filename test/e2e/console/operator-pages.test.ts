/**
 * The agent operator pages in headless Chromium against the real stack (PostgreSQL, the Temporal
 * dev server with a control worker, the API, a host runner on the real Docker engine, a gateway
 * serving the built console):
 * - an administrator stops an idle sandbox from the inventory and sees it become `stopped` without
 *   a reload; a second stop is refused and the API's 409 reason shows beside the button;
 * - a slot change out of range is refused before anything is sent; a valid one is saved;
 * - a saved secret never reaches the settings page's HTML, an empty replacement keeps it; a bad
 *   value is refused before sending and the server's 400 shows on its field;
 * - the signing keys section rotates the access-token signing key (confirmed, audited);
 * - a run's activity opens an event's content (audited) and the audit log shows the read;
 * - a batch action hides the selected group and its row button restores it;
 * - removing an allocated host is refused with the server's reason beside the button; a free host
 *   is removed.
 * Screenshots of each page are saved as test artifacts.
 */
import assert from 'node:assert/strict';
import type { Page, Request } from 'playwright-core';
import { enrollHost } from '../../../agent/hosts/host-registry';
import { ADMIN_TOKEN } from '../../support/admin';
import { AGENT_MODEL, ownerCall, reviewedGroup, startAgentStack, type AgentStack, type ReviewedGroup } from '../../support/agent-stack';
import { screenshot } from '../../support/browser';
import { endHostWorkflows, uniqueHostId } from '../../support/host-workflows';
import { startOperatorConsole, type OperatorConsole } from '../../support/operator-console';
import { waitFor } from '../../support/wait';

const SETTINGS_KEY = 'operator-console-settings-key-of-32-bytes!';
const SECRET = 'first-database-tool-secret-7f3a';
const NEW_SECRET = 'second-database-tool-secret-91cd';

describe('console: agent operator pages (Chromium, Temporal, Docker, PostgreSQL)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let ui: OperatorConsole;
  let page: Page;
  let group: ReviewedGroup;

  before(async () => {
    stack = await startAgentStack({ env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5', AGENT_SETTINGS_ENCRYPTION_KEY: SETTINGS_KEY } });
    ui = await startOperatorConsole(stack);
    page = ui.page;
    page.on('dialog', (dialog) => void dialog.accept());
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Write a file', model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await waitFor(async () => (await stack.t.db('agent_turns').where({ job_id: jobId }).pluck('state') as string[]).join() === 'completed', 'the first turn completed', 120_000);
    group = await reviewedGroup(stack, jobId);
  });
  const extraHosts: string[] = [];
  after(async () => {
    if (stack) await endHostWorkflows(stack.env.client, extraHosts);
    await ui?.close();
    await stack?.close();
  });
  afterEach(() => assert.deepEqual(ui.errors, [], 'no page errors'));

  const rowOf = (groupId: string) => page.locator('tr', { has: page.locator(`[data-testid="state-${groupId}"]`) });
  const stateBadge = (groupId: string, state: string) => page.locator(`[data-testid="state-${groupId}"] .badge`, { hasText: new RegExp(`^${state}$`) });

  it('an admin stops an idle sandbox from the inventory and sees it become stopped without reloading; it links to its workflow', async () => {
    await page.goto('/console/admin/agent/sandboxes');
    await stateBadge(group.groupId, 'running').waitFor();
    await page.evaluate(() => Reflect.set(globalThis, 'sameDocument', true));
    const link = rowOf(group.groupId).getByRole('link', { name: /^Temporal: workflow sandbox:/ });
    assert.equal(await link.getAttribute('href'), `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(`sandbox:${group.groupId}`)}`);
    await screenshot(page, 'operator-sandboxes');

    await rowOf(group.groupId).getByRole('button', { name: 'Stop', exact: true }).click();
    await rowOf(group.groupId).getByRole('status').filter({ hasText: 'Accepted.' }).waitFor();
    await stateBadge(group.groupId, 'stopped').waitFor({ timeout: 90_000 });
    assert.equal(await page.evaluate(() => Reflect.get(globalThis, 'sameDocument') as unknown), true, 'the page was not reloaded');
    const row = await stack.t.db('agent_sandboxes').where({ group_id: group.groupId }).first<{ state: string }>('state');
    assert.equal(row?.state, 'stopped');
    await screenshot(page, 'operator-sandbox-stopped');
  });

  it('a refused action shows the API\'s 409 reason beside its button', async () => {
    await rowOf(group.groupId).getByRole('button', { name: 'Stop', exact: true }).click();
    const alert = rowOf(group.groupId).getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /^The sandbox is stopped; this action needs it .+ \(409\)$/);
    const rows = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: group.groupId }).orderBy('id').pluck('outcome') as string[];
    assert.deepEqual(rows, ['succeeded', 'refused'], 'the stop and the refusal are audited by the server');
  });

  it('a slot change out of range is refused before sending; a valid one is saved', async () => {
    const sent: string[] = [];
    const onRequest = (req: Request): void => {
      if (req.method() === 'PUT' && req.url().includes('/slots')) sent.push(req.url());
    };
    page.on('request', onRequest);
    try {
      await page.goto('/console/admin/agent/hosts');
      const input = page.getByLabel(`Slots of ${stack.hostId}`);
      await input.fill('1');
      await page.locator('form', { has: input }).getByRole('button', { name: 'Save slots' }).click();
      await page.getByText('Slots must be a whole number from 2 to 128, or empty for the host\'s default.').waitFor();
      assert.equal(await input.getAttribute('aria-invalid'), 'true');
      await input.fill('129');
      await page.locator('form', { has: input }).getByRole('button', { name: 'Save slots' }).click();
      assert.deepEqual(sent, [], 'nothing was sent for 1 or 129');
      await input.fill('4');
      await page.locator('form', { has: input }).getByRole('button', { name: 'Save slots' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved 4 slots.' }).waitFor();
      assert.equal(sent.length, 1);
      const host = await stack.t.db('agent_hosts').where({ host_id: stack.hostId }).first<{ slots_saved: number | null }>('slots_saved');
      assert.equal(host?.slots_saved, 4);
      await screenshot(page, 'operator-hosts');
    } finally {
      page.off('request', onRequest);
    }
  });

  it('settings: secrets never appear in the page, an empty replacement keeps the saved one, a new one replaces it; bad values are refused on their field', async () => {
    const put = await fetch(`${stack.api.url}/admin/agent/settings`, {
      method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ settings: { database_tool_password: SECRET } }),
    });
    assert.equal(put.status, 200, await put.clone().text());
    await page.goto('/console/admin/agent/settings');
    const agentForm = page.getByRole('region', { name: 'Agent settings', exact: true });
    await agentForm.getByText('configured', { exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(SECRET), 'the saved secret is not in the page');
    assert.equal(await agentForm.getByLabel('database_tool_password', { exact: true }).inputValue(), '');

    const size = agentForm.getByLabel('workspace_download_max_mib', { exact: true });
    await size.fill('lots');
    await agentForm.getByRole('button', { name: 'Save changes' }).click();
    await agentForm.getByText('Enter a number.').waitFor();
    await size.fill('0');
    await agentForm.getByRole('button', { name: 'Save changes' }).click();
    const refusal = agentForm.locator('#f-settings\\.workspace_download_max_mib-error');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /^Invalid field 'settings\.workspace_download_max_mib'/, 'the server\'s 400 lands on its field');
    await size.fill('64');
    await agentForm.getByRole('button', { name: 'Save changes' }).click();
    await agentForm.getByRole('status').filter({ hasText: 'Saved: workspace_download_max_mib.' }).waitFor();
    const kept = (await (await fetch(`${stack.api.url}/admin/agent/settings`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { settings: Record<string, { configured?: boolean; value?: unknown }> };
    assert.equal(kept.settings.database_tool_password?.configured, true, 'the empty replacement kept the secret');
    assert.equal(kept.settings.workspace_download_max_mib?.value, 64);

    await agentForm.getByLabel('database_tool_password', { exact: true }).fill(NEW_SECRET);
    await agentForm.getByRole('button', { name: 'Save changes' }).click();
    await agentForm.getByRole('status').filter({ hasText: 'Saved: database_tool_password.' }).waitFor();
    const html = await page.content();
    assert.ok(!html.includes(SECRET) && !html.includes(NEW_SECRET), 'neither secret is in the page after saving');
    await screenshot(page, 'operator-settings');
  });

  it('settings: the signing keys section rotates the key after a confirmation and lists the new key as the next signer', async () => {
    await page.goto('/console/admin/agent/settings');
    const section = page.getByRole('region', { name: 'Signing keys', exact: true });
    await section.getByText('Signing now: bootstrap').waitFor();
    await section.getByRole('button', { name: 'Rotate signing key' }).click();
    await section.getByRole('status').filter({ hasText: 'Rotated' }).waitFor();
    const stored = await stack.t.db('auth_signing_keys').whereNot({ kid: 'bootstrap' }).pluck('kid') as string[];
    assert.equal(stored.length, 1, 'one rotation');
    await section.getByRole('cell', { name: stored[0]! }).waitFor();
    assert.ok(await stack.t.db('agent_audit_log').where({ action: 'agent.signing_key.rotate' }).first(), 'audited');
    await screenshot(page, 'operator-signing-keys');
  });

  it('a run\'s activity opens an event\'s content (audited), and the audit log shows the read', async () => {
    await page.goto(`/console/admin/agent/runs/${group.jobId}`);
    await page.getByText('recorded in the agent audit log').first().waitFor();
    await page.getByRole('button', { name: 'Open content (audited)' }).first().click();
    await page.locator('summary', { hasText: /^Content \(\d+ bytes/ }).first().waitFor();
    const reads = await stack.t.db('agent_audit_log').where({ action: 'agent.run.event_content.read' }).count<Array<{ count: string }>>('* as count');
    assert.equal(Number(reads[0]!.count), 1);
    await screenshot(page, 'operator-run-activity');

    await page.goto('/console/admin/agent/audit');
    await page.getByLabel('Category').selectOption('content');
    await page.locator('code', { hasText: 'agent.run.event_content.read' }).waitFor();
    assert.equal(await page.locator('tbody tr').count(), 1, 'only the content category is listed');
    await screenshot(page, 'operator-audit-log');
  });

  it('a batch action hides the selected stopped sandbox (one result per group); its row button restores it', async () => {
    await page.goto('/console/admin/agent/sandboxes');
    await stateBadge(group.groupId, 'stopped').waitFor();
    await page.getByLabel(`Select ${group.groupId}`).check();
    await page.getByLabel('Batch action on 1 selected').selectOption('remove_from_inventory');
    await page.getByRole('button', { name: 'Apply to selected' }).click();
    await page.getByRole('status', { name: 'Batch results' }).filter({ hasText: `${group.groupId}: stopped (200)` }).waitFor();
    await stateBadge(group.groupId, 'hidden \\(stopped\\)').waitFor();
    await rowOf(group.groupId).getByRole('button', { name: 'Restore to inventory' }).click();
    await rowOf(group.groupId).getByRole('button', { name: 'Remove from inventory' }).waitFor();
    const row = await stack.t.db('agent_sandboxes').where({ group_id: group.groupId }).first<{ hidden_at: Date | null }>('hidden_at');
    assert.equal(row?.hidden_at, null);
  });

  it('host removal: an allocated host is refused with the server\'s reason beside the button; a free host is removed', async () => {
    const [allocated, free] = [uniqueHostId('op-alloc'), uniqueHostId('op-free')];
    extraHosts.push(allocated, free);
    for (const id of extraHosts) await enrollHost(stack.t.db, id);
    const allocation = await fetch(`${stack.api.url}/admin/agent/servers`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ host_id: allocated }),
    });
    assert.equal(allocation.status, 201, await allocation.clone().text());
    await page.goto('/console/admin/agent/hosts');
    const hostRow = (id: string) => page.locator('tr', { has: page.getByLabel(`Slots of ${id}`) });
    await hostRow(allocated).getByRole('button', { name: 'Remove host' }).click();
    const refusal = hostRow(allocated).getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), new RegExp(`^Host ${allocated} is allocated \\(server allocation \\d+, active\\); release it with DELETE /admin/agent/servers/\\d+ \\(409\\)$`));

    await hostRow(free).getByRole('button', { name: 'Remove host' }).click();
    await hostRow(free).waitFor({ state: 'detached' });
    const row = await stack.t.db('agent_hosts').where({ host_id: free }).first<{ removed_at: Date | null } | undefined>('removed_at');
    assert.ok(!row || row.removed_at !== null, 'the free host is removed');
  });
});
