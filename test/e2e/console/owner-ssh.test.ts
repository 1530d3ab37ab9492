/**
 * Owner SSH in the console (docs/console.md "Owner workspace"), in headless Chromium against the real stack:
 * the Security page lists, adds and deletes SSH keys made by ssh-keygen (a refused key shows the
 * API's 400 reason under the field and registers nothing; a dismissed confirmation deletes
 * nothing); the chat page shows why SSH is not available while the host runs no SSH server, and
 * the `ssh <job_id>@<host> -p <port>` line with a working copy button once the host reports one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { createHeartbeat, type Heartbeat } from '../../../workers/host-heartbeat';
import { AGENT_MODEL, ownerCall, type AgentStack } from '../../support/agent-stack';
import { screenshot } from '../../support/browser';
import { testPreflight } from '../../support/docker';
import { captureLogs } from '../../support/logs';
import { startOwnerConsole, type OwnerConsole } from '../../support/owner-console';
import { scripted } from '../../support/scripted-conversation';
import { generateKey } from '../../support/ssh-sandbox';

const SSH_HOST = 'sandbox-1.example.test';
const SSH_PORT = 2222;

describe('console: owner SSH keys and the chat page SSH line (real stack, headless Chromium)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let page: Page;
  let errors: string[];
  let owner: OwnerConsole;
  let sshBeat: Heartbeat | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'console-ssh-'));

  const keyCount = async (): Promise<number> => Number((await stack.t.db('agent_ssh_keys').count<[{ count: string }]>('* as count'))[0]?.count);
  const keysTable = (): ReturnType<Page['getByRole']> => page.getByRole('table', { name: 'Your SSH keys' });

  before(async () => {
    owner = await startOwnerConsole({}, '/settings/security');
    ({ stack, page, errors } = owner);
    await owner.context.grantPermissions(['clipboard-read', 'clipboard-write']);
  });
  after(async () => {
    sshBeat?.stop();
    await owner?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => assert.deepEqual(errors, [], 'no page errors'));

  it('adds a key (a refused one shows the API reason), lists it with its fingerprint, and deletes it after confirming', async () => {
    const weak = await generateKey(dir, 'weak', 'rsa', 2048);
    const good = await generateKey(dir, 'good');
    const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${good.path}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
    await page.getByRole('heading', { name: 'SSH keys' }).waitFor();
    await keysTable().getByText('No SSH key yet.').waitFor();

    await page.getByLabel('Public key').fill(weak.publicKey);
    await page.getByRole('button', { name: 'Add key' }).click();
    const refusal = page.locator('#f-public_key-error');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /^public_key is an RSA key of 2048 bits; RSA keys need at least 3072 bits/);
    assert.equal(await page.getByLabel('Public key').getAttribute('aria-invalid'), 'true');
    assert.equal(await keyCount(), 0, 'a refused key registers nothing');

    await page.getByLabel('Key name').fill('work laptop');
    await page.getByLabel('Public key').fill(good.publicKey);
    await page.getByRole('button', { name: 'Add key' }).click();
    await page.getByText(`Key "work laptop" added (${fingerprint}).`).waitFor();
    const row = keysTable().locator('tbody tr', { hasText: 'work laptop' });
    await row.waitFor();
    assert.deepEqual((await row.locator('td').allInnerTexts()).slice(0, 3), ['work laptop', 'ssh-ed25519', fingerprint]);
    assert.equal(await page.getByLabel('Public key').inputValue(), '', 'the form is cleared');
    await screenshot(page, 'owner-ssh-keys');

    page.once('dialog', (dialog) => void dialog.dismiss());
    await row.getByRole('button', { name: 'Delete work laptop' }).click();
    assert.equal(await keyCount(), 1, 'a dismissed confirmation deletes nothing');
    await row.waitFor();

    let asked = '';
    page.once('dialog', (dialog) => { asked = dialog.message(); void dialog.accept(); });
    await row.getByRole('button', { name: 'Delete work laptop' }).click();
    await keysTable().getByText('No SSH key yet.').waitFor();
    assert.match(asked, new RegExp(`Delete the SSH key "work laptop" \\(${fingerprint.replace(/[+/]/g, '\\$&')}\\)`));
    assert.equal(await keyCount(), 0);
  });

  it("shows why SSH is not available, then the ssh line with a copy button once the sandbox's host runs an SSH server", async () => {
    stack.upstream.enqueue(scripted.finalText('Ready.'));
    const created = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Say ready.', model: AGENT_MODEL, repo: null, driver: 'builtin' });
    assert.equal(created.status, 201, await created.clone().text());
    const jobId = ((await created.json()) as { job_id: string }).job_id;
    await page.goto(`/console/chats/${jobId}`);
    await page.getByText('Turn 1 completed.').waitFor({ timeout: 120_000 });
    const line = page.locator('p.ssh-line');
    await line.getByText("SSH not available: the sandbox's host does not run an SSH server").waitFor({ timeout: 30_000 });
    assert.match(await line.innerText(), /add an SSH key first$/, 'an owner without a key is told to add one');

    // The host now reports its SSH server with its heartbeat, as a runner started with AGENT_SSH_PORT does.
    stack.heartbeat.stop();
    const preflight = await testPreflight();
    sshBeat = createHeartbeat({
      apiUrl: stack.api.url, hostId: stack.hostId, credential: stack.hostCredential, defaultSlots: stack.settings.AGENT_HOST_SLOTS,
      runtime: 'docker-test', log: captureLogs('heartbeat-ssh').log, ssh: { host: SSH_HOST, port: SSH_PORT },
      attestation: () => ({ capabilities: ['container', ...preflight.attestations], preflight }),
    });
    await sshBeat.beatOnce();
    const key = await generateKey(dir, 'chat');
    assert.equal((await ownerCall(stack, 'POST', '/v1/agent/ssh-keys', { public_key: key.publicKey })).status, 201);
    await page.reload();
    const command = `ssh ${jobId}@${SSH_HOST} -p ${SSH_PORT}`;
    await line.locator('code', { hasText: command }).waitFor({ timeout: 30_000 });
    assert.equal(await line.getByText('add an SSH key first').count(), 0, 'no hint once a key is registered');
    await line.getByRole('button', { name: 'Copy' }).click();
    await line.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), command);
    await screenshot(page, 'owner-chat-ssh');
  });
});
