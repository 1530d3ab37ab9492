/**
 * The workspace download end to end: the API (in-process) runs the `workspaceArchive` workflow on
 * the real Temporal dev server; a host worker archives the real container's `/workspace` into the
 * filesystem object store; the API streams it to the owner and deletes the object. Owners only;
 * 409 before the chat has a sandbox; 413 above the limit. A completed download logs nothing about
 * its stream; one the client abandons logs one info line and no error.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { get } from 'node:http';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { createHostActivities } from '../../activities/host-activities';
import type { PrepareSandboxInput, PrepareSandboxResult } from '../../activities/sandbox-activities';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { TEMPORARY_WORKSPACE_SHA } from '../../activities/docker/workspace-init';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { FsObjectStore } from '../../lib/object-store';
import { newId } from '../../agent/jobs/job-store';
import { hostTaskQueue } from '../../workflows/definitions/task-queues';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabaseForBlock, type TestDatabase } from '../support/db';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId } from '../support/docker';
import { temporalEnv, uniqueTaskQueue, workflowBundle } from '../support/temporal';
import { waitFor } from '../support/wait';

/** A user with `agent.use` and an API key; returns the user id and the key. */
async function owner(t: TestDatabase, email: string): Promise<{ id: number; key: string }> {
  const [user] = await t.db('users').insert({ email, role: 'pro', permissions: ['agent.use'] }).returning<Array<{ id: string }>>('id');
  const key = generateSecret('sk');
  await t.db('api_keys').insert({ user_id: user!.id, name: 'test', key_hash: hashSecret(key), prefix: secretPrefix(key) });
  return { id: Number(user!.id), key };
}

const noop = () => undefined;
/** An activity context whose logger is quiet (expected failures are asserted, not printed). */
function activityEnv(): MockActivityEnvironment {
  return new MockActivityEnvironment(undefined, { logger: { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop } });
}

function filesIn(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
  } catch {
    return [];
  }
}

describe('workspace archive download (API + Temporal + Docker + object store)', () => {
  let t: TestDatabase;
  freshDatabaseForBlock((db) => { t = db; });

  const hostId = `test-host-${testRunId}`;
  const groupId = `grp-${testRunId}-dl`;
  let env: TestWorkflowEnvironment;
  let api: TestApi;
  let storeRoot: string;
  let scratch: string;
  let stopWorkers: () => Promise<void>;
  let controlQueue: string;
  let alice: { id: number; key: string };
  let bob: { id: number; key: string };
  let jobId: string;
  const activities = () => createHostActivities({
    docker: docker(), hostId, image: SANDBOX_IMAGE, sandboxDiskDir: TEST_DISK_ROOT, limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 },
    objectStore: new FsObjectStore(storeRoot), sandboxLabels: testLabels(),
  });

  before(async () => {
    env = await temporalEnv();
    storeRoot = mkdtempSync(join(tmpdir(), 'object-store-'));
    scratch = mkdtempSync(join(tmpdir(), 'archive-dl-'));
    controlQueue = uniqueTaskQueue('control');
    const control = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: controlQueue, workflowBundle: await workflowBundle(),
    });
    const host = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: hostTaskQueue(hostId), activities: activities(),
    });
    const running = Promise.all([control.run(), host.run()]);
    stopWorkers = async () => {
      control.shutdown();
      host.shutdown();
      await running;
    };
    api = await startTestApi({
      db: t.db, temporal: env.client, objectStore: new FsObjectStore(storeRoot),
      env: { TEMPORAL_CONTROL_TASK_QUEUE: controlQueue, WORKSPACE_DOWNLOAD_MAX_MIB: '1' },
    });
    alice = await owner(t, 'alice@example.com');
    bob = await owner(t, 'bob@example.com');
    await t.db('agent_hosts').insert({ host_id: hostId, credential_hash: hashSecret('x'), credential_prefix: 'ahc_x' });
    jobId = newId('job');
    await t.db('agent_jobs').insert({ job_id: jobId, owner_id: alice.id, title: 'download me', model: 'm', repo: null });
  });

  after(async () => {
    await api?.close();
    await stopWorkers?.();
    await removeContainers();
    rmSync(storeRoot, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  /** Runs the prepareSandbox activity in an activity context. */
  const prepare = (input: PrepareSandboxInput): Promise<PrepareSandboxResult> =>
    activityEnv().run((i: PrepareSandboxInput) => activities().prepareSandbox(i), input);
  /** Log lines of `target` about a download's stream ending (aborted, failed, or Koa's unhandled error). */
  const streamLines = (target: TestApi) => target.logs.lines.filter((line) =>
    line.msg === 'unhandled koa error' || line.event === 'workspace_archive_download_aborted' || line.event === 'workspace_archive_stream_failed');
  const download = (key: string, id = jobId) => fetch(`${api.url}/v1/agent/jobs/${id}/workspace/archive`, { headers: { authorization: `Bearer ${key}` } });

  it('answers 409 while the chat has no sandbox', async () => {
    const res = await download(alice.key);
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /no sandbox yet/);
  });

  it('prepareSandbox creates the retained container and a temporary workspace, idempotently', async () => {
    const input = { jobId, groupId, generation: 1, attemptId: 'att_1', uid: 1001, repo: null };
    const first = await prepare(input);
    assert.equal(first.containerName, `sbx-${groupId}`);
    assert.equal(first.baseSha, TEMPORARY_WORKSPACE_SHA);
    const again = await prepare({ ...input, attemptId: 'att_2' });
    assert.deepEqual(again, first);
    await assert.rejects(
      prepare({ ...input, repo: 'ssh://example.com/x' }),
      (err: { type?: string; nonRetryable?: boolean }) => err.type === 'UnsupportedRepo' && err.nonRetryable === true,
    );
    await t.db('agent_sandboxes').insert({ group_id: groupId, host_id: hostId, container_name: first.containerName, container_id: first.containerId, state: 'running' });
    await t.db('agent_jobs').where({ job_id: jobId }).update({ host_id: hostId, group_id: groupId });
  });

  it('streams the gzipped tar of the whole workspace to the owner and deletes the stored object', async () => {
    const sandbox = new DockerSandbox(docker(), `sbx-${groupId}`, 1001);
    await sandbox.writeFile('hello.txt', 'hello from the sandbox\n');
    await sandbox.writeFile('src/deep/module.py', 'print(1)\n');
    const res = await download(alice.key);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('content-type'), 'application/gzip');
    assert.equal(res.headers.get('content-disposition'), `attachment; filename="${jobId}-workspace.tar.gz"`);
    const archive = join(scratch, 'download.tar.gz');
    writeFileSync(archive, Buffer.from(await res.arrayBuffer()));
    const listing = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n');
    for (const entry of ['workspace/hello.txt', 'workspace/src/deep/module.py', 'workspace/.git/HEAD']) assert.ok(listing.includes(entry), `${entry} in ${listing.join(', ')}`);
    const hello = execFileSync('tar', ['-xzOf', archive, 'workspace/hello.txt'], { encoding: 'utf8' });
    assert.equal(hello, 'hello from the sandbox\n');
    await waitFor(() => filesIn(storeRoot).length === 0, 'the archive object to be deleted after the download');
    await waitFor(() => api.logs.lines.some((line) => line.event === 'http_request' && line.status === 200 && String(line.path).endsWith('/workspace/archive')), 'the request line of the download');
    assert.deepEqual(streamLines(api), [], 'a completed download logs no error and no abort');
  });

  it('answers 404 to another owner and to an unknown job', async () => {
    assert.equal((await download(bob.key)).status, 404);
    assert.equal((await download(alice.key, newId('job'))).status, 404);
    assert.equal((await download('sk_not-a-key')).status, 401);
  });

  it('answers 413 when the workspace is larger than WORKSPACE_DOWNLOAD_MAX_MIB before compression', async () => {
    const sandbox = new DockerSandbox(docker(), `sbx-${groupId}`, 1001);
    const made = await sandbox.exec(['sh', '-c', 'head -c 1500000 /dev/zero > zeros.bin'], { timeoutMs: 20_000, maxOutputBytes: 1000 });
    assert.equal(made.exitCode, 0, made.stderr);
    const res = await download(alice.key);
    assert.equal(res.status, 413);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /more than the download limit of 1 MiB/);
    assert.deepEqual(filesIn(storeRoot), []);
  });

  it('archives a stopped container without starting it, measuring the tar stream', async () => {
    const container = docker().getContainer(`sbx-${groupId}`);
    await container.stop({ t: 0 });
    const tooLarge = await download(alice.key);
    assert.equal(tooLarge.status, 413);
    await container.start();
    const sandbox = new DockerSandbox(docker(), `sbx-${groupId}`, 1001);
    assert.equal((await sandbox.exec(['rm', 'zeros.bin'], { timeoutMs: 20_000, maxOutputBytes: 1000 })).exitCode, 0);
    await container.stop({ t: 0 });
    const res = await download(alice.key);
    assert.equal(res.status, 200, await res.clone().text());
    const archive = join(scratch, 'stopped.tar.gz');
    writeFileSync(archive, Buffer.from(await res.arrayBuffer()));
    assert.ok(execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n').includes('workspace/hello.txt'));
    assert.equal((await container.inspect()).State.Running, false, 'the download does not start the container');
    await waitFor(() => filesIn(storeRoot).length === 0, 'no archive object left behind');
  });

  it('logs a download the client abandons as one info line, with no error, and still deletes the object', async () => {
    const container = docker().getContainer(`sbx-${groupId}`);
    if (!(await container.inspect()).State.Running) await container.start();
    const sandbox = new DockerSandbox(docker(), `sbx-${groupId}`, 1001);
    // 24 MB that gzip cannot shrink: far more than the loopback socket buffers hold while the client reads nothing.
    const made = await sandbox.exec(['sh', '-c', 'head -c 24000000 /dev/urandom > noise.bin'], { timeoutMs: 30_000, maxOutputBytes: 1000 });
    assert.equal(made.exitCode, 0, made.stderr);
    const roomy = await startTestApi({
      db: t.db, temporal: env.client, objectStore: new FsObjectStore(storeRoot),
      env: { TEMPORAL_CONTROL_TASK_QUEUE: controlQueue, WORKSPACE_DOWNLOAD_MAX_MIB: '64' },
    });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = get(`${roomy.url}/v1/agent/jobs/${jobId}/workspace/archive`, { headers: { authorization: `Bearer ${alice.key}` } }, (res) => {
          res.once('data', () => {
            resolve(res.statusCode ?? 0);
            req.destroy();
          });
        });
        req.on('error', (err) => {
          if (!req.destroyed) reject(err);
        });
      });
      assert.equal(status, 200);
      const lines = await waitFor(() => {
        const seen = streamLines(roomy);
        return seen.length > 0 ? seen : undefined;
      }, 'the abandoned download to be logged');
      await waitFor(() => filesIn(storeRoot).length === 0, 'the archive object to be deleted after the abandoned download');
      assert.deepEqual(streamLines(roomy).map((line) => [line.level, line.msg, line.job_id]), [['info', 'workspace archive download aborted by the client', jobId]]);
      assert.equal(lines[0]!.err, undefined, 'no error object nor stack');
      assert.deepEqual(roomy.logs.lines.filter((line) => line.level === 'warn' || line.level === 'error'), [], 'nothing at warn or error');
    } finally {
      await roomy.close();
      await sandbox.exec(['rm', '-f', 'noise.bin'], { timeoutMs: 20_000, maxOutputBytes: 1000 });
    }
  });

  it('answers 409 when the recorded container no longer exists on its host', async () => {
    const orphan = newId('job');
    const missingGroup = `grp-${testRunId}-gone`;
    await t.db('agent_sandboxes').insert({ group_id: missingGroup, host_id: hostId, container_name: `sbx-${missingGroup}`, state: 'running' });
    await t.db('agent_jobs').insert({ job_id: orphan, owner_id: alice.id, title: 'orphan', model: 'm', repo: null, host_id: hostId, group_id: missingGroup });
    const res = await download(alice.key, orphan);
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /no longer exists/);
  });

  it('answers 409 naming the state while the group is archiving, cold or restoring, and changes nothing', async () => {
    for (const state of ['archiving', 'cold', 'restoring'] as const) {
      const held = newId('job');
      const heldGroup = `grp-${testRunId}-${state}`;
      await t.db('agent_sandboxes').insert({ group_id: heldGroup, host_id: hostId, container_name: `sbx-${heldGroup}`, state });
      await t.db('agent_jobs').insert({ job_id: held, owner_id: alice.id, title: state, model: 'm', repo: null, host_id: hostId, group_id: heldGroup });
      const res = await download(alice.key, held);
      assert.equal(res.status, 409, state);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'conflict');
      assert.match(body.error.message, new RegExp(`\\(state ${state}\\); its workspace cannot be downloaded now`));
      const row = await t.db('agent_sandboxes').where({ group_id: heldGroup }).first<{ state: string }>('state');
      assert.equal(row?.state, state);
    }
  });
});
