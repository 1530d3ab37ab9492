/**
 * Owners' SSH keys through the control-plane API (PostgreSQL): registration accepts Ed25519,
 * ECDSA and RSA >= 3072 bits and names why anything else is refused, shows the fingerprint
 * `ssh-keygen -l` prints, holds at most 10 per owner, and each owner sees and deletes only their
 * own; `GET /v1/agent/jobs/:jobId/ssh` shows the ssh line once the sandbox's host reports its server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { enrollHost } from '../../agent/hosts/host-registry';
import { newId } from '../../agent/jobs/job-store';
import { createHeartbeat } from '../../workers/host-heartbeat';
import { createJob, createOwner, type TestOwner } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { captureLogs } from '../support/logs';
import { generateKey } from '../support/ssh-sandbox';

/** The fields these tests read of an answer (a key, a key list, an error or the ssh view). */
interface Answer {
  id: string; name: string; key_type: string; public_key: string; fingerprint: string;
  keys: Array<{ id: string }>; max_keys: number; available: boolean; reason: string | null;
  error: { message: string; param?: string };
}

describe('owner SSH keys and the chat SSH line (API + PostgreSQL)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let owner: TestOwner;
  let other: TestOwner;
  const dir = mkdtempSync(join(tmpdir(), 'agent-ssh-keys-'));

  const call = async (who: TestOwner, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method, headers: { authorization: `Bearer ${who.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: await res.json() as Answer };
  };
  const keyCount = async (who: TestOwner) => Number((await t.db('agent_ssh_keys').where({ user_id: who.userId }).count<{ count: string }[]>('* as count'))[0]!.count);

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    owner = await createOwner(t.db);
    other = await createOwner(t.db);
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  it('registers an Ed25519 key with the fingerprint ssh-keygen prints and its comment as name', async () => {
    const key = await generateKey(dir, 'laptop');
    const created = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: `${key.publicKey}\n` });
    assert.equal(created.status, 201);
    const { stdout } = await promisify(execFile)('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key.path}.pub`]);
    assert.equal(created.body.fingerprint, stdout.split(' ')[1]);
    assert.equal(created.body.name, 'laptop@test');
    assert.equal(created.body.key_type, 'ssh-ed25519');
    assert.equal(created.body.public_key, key.publicKey.split(' ').slice(0, 2).join(' '));
    const again = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: key.publicKey, name: 'same key' });
    assert.equal(again.status, 409);
    assert.match(again.body.error.message, /already registered/);
    const listed = await call(owner, 'GET', '/v1/agent/ssh-keys');
    assert.deepEqual(listed.body.keys.map((k) => k.id), [created.body.id]);
    assert.equal(listed.body.max_keys, 10);
    assert.deepEqual((await call(other, 'GET', '/v1/agent/ssh-keys')).body.keys, [], 'another owner sees none of them');
    assert.equal((await call(other, 'DELETE', `/v1/agent/ssh-keys/${created.body.id}`)).status, 404, 'nor deletes them');
    assert.equal((await call(owner, 'DELETE', `/v1/agent/ssh-keys/${created.body.id}`)).status, 200);
    assert.equal(await keyCount(owner), 0);
  });

  it('refuses with a 400 naming why: not a key, a private key, RSA under 3072 bits; accepts RSA 3072 and ECDSA', async () => {
    const cases: Array<[string, RegExp]> = [
      ['ssh-ed25519 not-base64 me', /not an SSH public key/],
      [readFileSync((await generateKey(dir, 'private')).path, 'utf8'), /private key: never upload it/],
      [(await generateKey(dir, 'old-rsa', 'rsa', 2048)).publicKey, /RSA key of 2048 bits; RSA keys need at least 3072 bits/],
    ];
    for (const [publicKey, message] of cases) {
      const refused = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: publicKey });
      assert.equal(refused.status, 400, publicKey.slice(0, 40));
      assert.match(refused.body.error.message, message);
      assert.equal(refused.body.error.param, 'public_key');
    }
    assert.equal((await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: 'ssh-ed25519 AAAA', extra: 1 })).status, 400, 'unknown fields');
    assert.equal(await keyCount(owner), 0, 'nothing was stored');
    assert.equal((await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: (await generateKey(dir, 'rsa-3072', 'rsa', 3072)).publicKey })).status, 201);
    const ecdsa = await generateKey(dir, 'ecdsa', 'ecdsa');
    const created = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: ecdsa.publicKey, name: 'work' });
    assert.equal(created.status, 201);
    assert.deepEqual([created.body.key_type, created.body.name], ['ecdsa-sha2-nistp256', 'work']);
  });

  it('holds at most 10 keys per owner', async () => {
    await t.db('agent_ssh_keys').where({ user_id: owner.userId }).delete();
    for (let i = 0; i < 10; i += 1) {
      const added = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: (await generateKey(dir, `many-${i}`)).publicKey });
      assert.equal(added.status, 201, JSON.stringify(added.body));
    }
    const eleventh = await call(owner, 'POST', '/v1/agent/ssh-keys', { public_key: (await generateKey(dir, 'eleventh')).publicKey });
    assert.equal(eleventh.status, 409);
    assert.match(eleventh.body.error.message, /At most 10 SSH keys/);
    assert.equal(await keyCount(owner), 10);
  });

  it("shows a chat's ssh line once its sandbox's host reports an SSH server, and why not otherwise", async () => {
    const hostId = `ssh-view-${process.pid}`;
    const { credential } = await enrollHost(t.db, hostId);
    const jobId = await createJob(t.db, owner.userId, hostId);
    const path = `/v1/agent/jobs/${jobId}/ssh`;
    assert.deepEqual((await call(owner, 'GET', path)).body, { job_id: jobId, available: false, reason: 'no_sandbox', command: null, host: null, port: null, keys: 10 });
    const groupId = newId('grp');
    await t.db('agent_sandboxes').insert({ group_id: groupId, host_id: hostId, container_name: 'c', generation: 1, state: 'running' });
    await t.db('agent_jobs').where({ job_id: jobId }).update({ group_id: groupId });
    assert.equal((await call(owner, 'GET', path)).body.reason, 'host_ssh_off');
    const beat = createHeartbeat({ apiUrl: api.url, hostId, credential, defaultSlots: 3, runtime: 'docker-test', log: captureLogs('hb').log, ssh: { host: 'sandbox.example.test', port: 2222 } });
    assert.equal((await beat.beatOnce()).ok, true);
    const shown = await call(owner, 'GET', path);
    assert.deepEqual(shown.body, { job_id: jobId, available: true, reason: null, command: `ssh ${jobId}@sandbox.example.test -p 2222`, host: 'sandbox.example.test', port: 2222, keys: 10 });
    await t.db('agent_sandboxes').where({ group_id: groupId }).update({ pending_action: 'stop', state: 'stop_pending' });
    assert.deepEqual([(await call(owner, 'GET', path)).body.available, (await call(owner, 'GET', path)).body.reason], [false, 'sandbox_not_running']);
    assert.equal((await call(other, 'GET', path)).status, 404, "another owner's chat is not found");
  });
});
