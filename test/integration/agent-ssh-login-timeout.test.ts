/**
 * The SSH server's bound on connections that never log in (docs/ssh.md "Connections that never
 * log in"), over real things: raw TCP sockets on 127.0.0.1 that send nothing, or only their
 * identification line, are closed once the (shortened) login timeout passes, and past the cap a
 * new one is closed at once; a session that logged in (the API on PostgreSQL, a real sandbox on
 * Docker, Debian's OpenSSH client) outlives the timeout.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostApiClient } from '../../activities/agent/host-api-client';
import { loadOrCreateHostKey } from '../../activities/ssh/host-key';
import { createSshServer, type SshServer } from '../../activities/ssh/ssh-server';
import { enrollHost } from '../../agent/hosts/host-registry';
import { createOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { docker, removeContainers } from '../support/docker';
import { captureLogs, type CapturedLogs } from '../support/logs';
import { generateKey, runSsh, startSshChat, type SshChat } from '../support/ssh-sandbox';
import { waitFor } from '../support/wait';

const LOGIN_TIMEOUT_MS = 2_000;
const MAX_UNAUTHENTICATED = 3;

interface RawConnection { socket: Socket; received: () => string; closed: Promise<void> }

/** A raw TCP connection to the server: what it received, and its close (failing the test when the server never closes it). */
async function rawConnection(port: number, what: string): Promise<RawConnection> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1'); });
  socket.on('error', () => undefined);
  socket.once('close', () => { isClosed = true; });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const closed = waitFor(() => isClosed, `the server closing ${what}`, LOGIN_TIMEOUT_MS * 5).then(() => undefined);
  // Awaited only by the tests that expect the close; a never-awaited rejection must not crash mocha.
  closed.catch(() => undefined);
  return { socket, received: () => received, closed };
}

describe('SSH connections that never log in are closed (raw sockets, API + Docker + OpenSSH client)', function () {
  this.timeout(120_000);
  let t: TestDatabase;
  let api: TestApi;
  let server: SshServer;
  let port: number;
  let logs: CapturedLogs;
  let chat: SshChat;
  let ownerKey: string;
  const dir = mkdtempSync(join(tmpdir(), 'agent-ssh-login-'));
  const hostId = `ssh-login-host-${process.pid}`;
  const timeouts = () => logs.lines.filter((l) => l.event === 'agent_ssh_login_timeout');

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    const { credential } = await enrollHost(t.db, hostId);
    const owner = await createOwner(t.db);
    chat = await startSshChat(t.db, owner.userId, hostId);
    const pair = await generateKey(dir, 'owner');
    ownerKey = pair.path;
    const registered = await fetch(`${api.url}/v1/agent/ssh-keys`, {
      method: 'POST', headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ public_key: pair.publicKey }),
    });
    assert.equal(registered.status, 201);
    logs = captureLogs('ssh');
    server = createSshServer({
      docker: docker(), api: new HostApiClient({ apiUrl: api.url, hostId, credential }), hostKey: await loadOrCreateHostKey(join(dir, 'host_key')),
      log: logs.log, loginTimeoutMs: LOGIN_TIMEOUT_MS, maxUnauthenticated: MAX_UNAUTHENTICATED,
    });
    port = await server.listen(0, '127.0.0.1');
  });
  after(async () => {
    await server?.close();
    await api?.close();
    await removeContainers();
    await t?.drop();
  });

  it('closes a socket that sends nothing, and one that sends only its identification line, logging each', async () => {
    const silent = await rawConnection(port, 'a silent connection');
    const banner = await rawConnection(port, 'a connection that sent only its identification line');
    banner.socket.write('SSH-2.0-probe_1.0\r\n');
    await waitFor(() => banner.received().startsWith('SSH-2.0-agent-sandbox-ssh'), 'the server answering the identification line');
    await Promise.all([silent.closed, banner.closed]);
    assert.equal(silent.received(), 'SSH-2.0-agent-sandbox-ssh\r\n', 'the silent client got only the server\'s identification line');
    assert.equal(timeouts().length, 2);
    for (const line of timeouts()) {
      assert.equal(line.client, '127.0.0.1');
      assert.equal(line.timeout_seconds, LOGIN_TIMEOUT_MS / 1000);
    }
  });

  it(`closes a connection at once while ${MAX_UNAUTHENTICATED} are waiting to log in`, async () => {
    const waiting = await Promise.all(Array.from({ length: MAX_UNAUTHENTICATED }, (_, i) => rawConnection(port, `waiting connection ${i + 1}`)));
    const refusedBefore = logs.lines.filter((l) => l.reason === 'too_many_unauthenticated').length;
    const extra = await rawConnection(port, 'the connection past the cap');
    await extra.closed;
    const refused = logs.lines.filter((l) => l.reason === 'too_many_unauthenticated');
    assert.equal(refused.length, refusedBefore + 1, 'the extra connection was refused by the cap');
    assert.ok(waiting.every((w) => !w.socket.destroyed && w.socket.readyState === 'open'), 'the waiting ones are still open');
    await Promise.all(waiting.map((w) => w.closed));
    // Once they are gone, a new connection is admitted again (it is closed by the timeout, not the cap).
    const later = await rawConnection(port, 'a connection after the others left');
    await later.closed;
    assert.equal(logs.lines.filter((l) => l.reason === 'too_many_unauthenticated').length, refusedBefore + 1);
  });

  it('leaves a session that logged in open past the login timeout', async () => {
    const before = timeouts().length;
    const wait = (LOGIN_TIMEOUT_MS * 2) / 1000;
    const run = await runSsh({ key: ownerKey, port, user: chat.jobId, command: `sleep ${wait}; echo still here` }).done;
    assert.equal(run.stdout, 'still here\n', run.stderr);
    assert.equal(run.code, 0);
    assert.equal(timeouts().length, before, 'no login timeout for the logged-in session');
  });
});
