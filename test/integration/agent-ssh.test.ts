/**
 * Owner SSH into a chat's retained sandbox (docs/ssh.md), end to end over real things: the API on
 * PostgreSQL (keys registered through its routes, each session decided and audited by it), the
 * host runner's SSH server on 127.0.0.1 with the host's own credential, a real sandbox container
 * on Docker, and Debian's OpenSSH client with a key made by ssh-keygen.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HostApiClient } from '../../activities/agent/host-api-client';
import { loadOrCreateHostKey } from '../../activities/ssh/host-key';
import { createSshServer, type SshServer } from '../../activities/ssh/ssh-server';
import { enrollHost } from '../../agent/hosts/host-registry';
import { newId } from '../../agent/jobs/job-store';
import { createOwner, type TestOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { docker, removeContainers } from '../support/docker';
import { captureLogs } from '../support/logs';
import { generateKey, runSsh, startSshChat, type SshChat } from '../support/ssh-sandbox';
import { TEST_MEMBER_UID } from '../support/member-sandbox';
import { waitFor } from '../support/wait';

interface AuditRow { action: string; outcome: string; actor_type: string; actor_user_id: string | null; actor_name: string | null; target_id: string; reason: string | null; details: Record<string, unknown> }

describe('owner SSH into the retained sandbox (API + SSH server + Docker + OpenSSH client)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let api: TestApi;
  let server: SshServer;
  let port: number;
  let owner: TestOwner;
  let stranger: TestOwner;
  let chat: SshChat;
  let ownerKey: string;
  let strangerKey: string;
  const dir = mkdtempSync(join(tmpdir(), 'agent-ssh-'));
  const hostId = `ssh-host-${process.pid}`;

  const registerKey = (who: TestOwner, publicKey: string) => fetch(`${api.url}/v1/agent/ssh-keys`, {
    method: 'POST', headers: { authorization: `Bearer ${who.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ public_key: publicKey }),
  });
  const audit = (jobId: string) => t.db('agent_audit_log').where({ target_type: 'chat', target_id: jobId }).orderBy('id').select<AuditRow[]>('*');

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    const { credential } = await enrollHost(t.db, hostId);
    owner = await createOwner(t.db);
    stranger = await createOwner(t.db);
    chat = await startSshChat(t.db, owner.userId, hostId);
    const ownerPair = await generateKey(dir, 'owner');
    const strangerPair = await generateKey(dir, 'stranger');
    ownerKey = ownerPair.path;
    strangerKey = strangerPair.path;
    assert.equal((await registerKey(owner, ownerPair.publicKey)).status, 201);
    assert.equal((await registerKey(stranger, strangerPair.publicKey)).status, 201);
    const hostApi = new HostApiClient({ apiUrl: api.url, hostId, credential });
    server = createSshServer({ docker: docker(), api: hostApi, hostKey: await loadOrCreateHostKey(join(dir, 'host_key')), log: captureLogs('ssh').log, loginTimeoutMs: 30_000, maxUnauthenticated: 16 });
    port = await server.listen(0, '127.0.0.1');
  });
  after(async () => {
    await server?.close();
    await api?.close();
    await removeContainers();
    await t?.drop();
  });

  it("the owner's key runs a command as the chat member in /workspace; open and close are audited", async () => {
    const run = await runSsh({ key: ownerKey, port, user: chat.jobId, command: 'id -u; pwd; echo oops >&2; exit 7' }).done;
    assert.equal(run.stdout, `${TEST_MEMBER_UID}\n/workspace\n`, run.stderr);
    assert.equal(run.stderr, 'oops\n');
    assert.equal(run.code, 7, 'the exit status comes back');
    const rows = await waitFor(async () => {
      const found = await audit(chat.jobId);
      return found.some((r) => r.action === 'agent.sandbox.ssh_session_closed') && found;
    }, 'the close row');
    const [opened, closed] = rows;
    const { stdout: fingerprintLine } = await promisify(execFile)('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${ownerKey}.pub`]);
    assert.equal(opened!.action, 'agent.sandbox.ssh_session_opened');
    assert.equal(opened!.actor_type, 'user');
    assert.equal(Number(opened!.actor_user_id), owner.userId);
    assert.equal(opened!.details.fingerprint, fingerprintLine.split(' ')[1], 'the fingerprint ssh-keygen prints');
    assert.equal(opened!.details.host_id, hostId);
    assert.equal(closed!.details.session_id, opened!.details.session_id);
    assert.equal(typeof closed!.details.duration_ms, 'number');
    assert.equal(closed!.details.ended_by, 'command');
  });

  it('gives a terminal when asked (-tt)', async () => {
    // `[ -t ]` (isatty) rather than `tty`: under gVisor a terminal has no /dev/pts name.
    const probe = 'if [ -t 0 ] && [ -t 1 ]; then echo terminal; else echo plain; fi; id -un';
    const run = await runSsh({ key: ownerKey, port, user: chat.jobId, command: probe, tty: true }).done;
    assert.equal(run.stdout, 'terminal\r\nmember-10001\r\n', 'a terminal, which also turns newlines into CRLF');
    const plain = await runSsh({ key: ownerKey, port, user: chat.jobId, command: probe }).done;
    assert.equal(plain.stdout, 'plain\nmember-10001\n');
    assert.equal(run.code, 0);
  });

  it("refuses another user's key, and a chat that does not exist; both audited", async () => {
    const other = await runSsh({ key: strangerKey, port, user: chat.jobId, command: 'id -u' }).done;
    assert.equal(other.code, 255);
    assert.match(other.stderr, /Permission denied/);
    assert.equal(other.stdout, '');
    const missing = newId('job');
    const unknown = await runSsh({ key: ownerKey, port, user: missing, command: 'id -u' }).done;
    assert.equal(unknown.code, 255);
    assert.match(unknown.stderr, /Permission denied/);
    const refusedHere = (await audit(chat.jobId)).filter((r) => r.action === 'agent.sandbox.ssh_session_refused');
    assert.deepEqual(refusedHere.map((r) => [r.reason, r.actor_type, r.actor_name, r.outcome]), [['not_owner', 'system', 'ssh-server', 'refused']]);
    const refusedThere = await audit(missing);
    assert.deepEqual(refusedThere.map((r) => [r.action, r.reason]), [['agent.sandbox.ssh_session_refused', 'unknown_chat']]);
  });

  it('ends a live session when the sandbox stops, and refuses new ones after', async () => {
    const live = runSsh({ key: ownerKey, port, user: chat.jobId, command: 'echo started; sleep 300' });
    await waitFor(() => live.stdout() === 'started\n', 'the live command running');
    // As the operator's stop does: the group is marked, then its container stops.
    await t.db('agent_sandboxes').where({ group_id: chat.groupId }).update({ state: 'stopped' });
    await docker().getContainer(chat.containerName).stop({ t: 1 });
    const ended = await live.done;
    assert.notEqual(ended.code, 0, 'the session ended with the sandbox');
    const after = await runSsh({ key: ownerKey, port, user: chat.jobId, command: 'id -u' }).done;
    assert.equal(after.code, 255);
    assert.match(after.stderr, /Permission denied/);
    const rows = await waitFor(async () => {
      const found = await audit(chat.jobId);
      const count = (action: string) => found.filter((r) => r.action === action).length;
      return count('agent.sandbox.ssh_session_closed') === count('agent.sandbox.ssh_session_opened') && found;
    }, 'the live session closed');
    assert.equal(rows.filter((r) => r.action === 'agent.sandbox.ssh_session_refused').at(-1)!.reason, 'sandbox_not_running');
    assert.ok(['command', 'sandbox'].includes(String(rows.filter((r) => r.action === 'agent.sandbox.ssh_session_closed').at(-1)!.details.ended_by)));
  });
});
