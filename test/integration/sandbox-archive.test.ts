/**
 * Archive to object storage and delete, cold and restoring (docs/sandboxes.md "Archives") over the real stack: the
 * sandbox group workflow on the Temporal dev server, a host runner on the real Docker engine,
 * PostgreSQL, and a real S3 server (versitygw) holding the archives. The archive goes up with a
 * presigned single PUT; its receipt is committed only after verification, only then is the
 * container removed; a new turn restores the exact workspace (tree, modes, owners, bytes) into a
 * new generation after checking the archive's SHA-256 and length. A corrupted object never leads
 * to a deletion, and a corrupted archive is never restored.
 */
import assert from 'node:assert/strict';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { admin as callAdmin } from '../support/admin';
import { AGENT_MODEL, docker, ownerCall, startAgentStack, reviewedGroup, type AgentStack, type ReviewedGroup } from '../support/agent-stack';
import { execIn } from '../support/docker';
import { testS3Store } from '../support/s3-server';
import { waitFor } from '../support/wait';
import { S3ObjectStore, type ExpectedObject, type VerifyOptions } from '../../lib/object-store';
import { ensureDeletionSweepSchedule } from '../../agent/deletion/sweep-schedule';

interface Reply { status: number; body: Record<string, unknown> & { error?: { message: string; param?: string | null } } }
type Group = ReviewedGroup;

/**
 * The real store, with one switch: `corruptNextVerify` replaces the uploaded object with other bytes
 * (through the raw S3 API) just before the control plane verifies it, as a bit-rotting or misbehaving
 * server would. The verification itself is the store's own.
 */
class CorruptibleStore extends S3ObjectStore {
  corruptNextVerify = false;
  constructor(private readonly raw: S3Client, private readonly bucketName: string, options: ConstructorParameters<typeof S3ObjectStore>[0]) {
    super(options);
  }
  override async verify(key: string, expected: ExpectedObject, opts?: VerifyOptions) {
    if (this.corruptNextVerify) {
      this.corruptNextVerify = false;
      await this.raw.send(new DeleteObjectCommand({ Bucket: this.bucketName, Key: key }));
      await this.raw.send(new PutObjectCommand({ Bucket: this.bucketName, Key: key, Body: Buffer.alloc(expected.length, 7) }));
    }
    return super.verify(key, expected, opts);
  }
}

/** Files, directories and links under the archived paths: type, mode, owner, size, mtime (whole seconds: the engine's tar keeps no more) and SHA-256. */
const TREE = [
  'cd / && find workspace home etc/agent -printf "%p %y %m %U:%G %s %Ts %l\\n" | sort',
  'cd / && find workspace home etc/agent -type f -print0 | sort -z | xargs -0 sha256sum',
].join(' && ');

describe('sandbox archives: archive and delete, cold and restoring (Temporal, Docker, PostgreSQL, S3)', function () {
  this.timeout(300_000);
  let stack: AgentStack;
  let store: CorruptibleStore;
  let raw: S3Client;
  let bucket: string;

  before(async () => {
    const s3 = await testS3Store('archives');
    raw = s3.client;
    bucket = s3.bucket;
    store = new CorruptibleStore(raw, bucket, {
      endpoint: s3.s3.endpoint, region: 'us-east-1', bucket, forcePathStyle: true, credentials: s3.s3.credentials,
    });
    stack = await startAgentStack({
      objectStore: store,
      // A bucket is configured: the deletion sweep archives a last chat's sandbox before deleting it.
      env: { AGENT_SANDBOX_WORKFLOW_IDLE_SECONDS: '5', OBJECT_STORE_BACKEND: 's3', S3_ENDPOINT: s3.s3.endpoint, S3_BUCKET: bucket },
    });
  });
  after(async () => {
    await stack?.close();
  });

  const admin = (method: string, path: string, body?: unknown) => callAdmin<Reply['body']>(stack.api, method, path, body);

  const row = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId })
    .first<{ state: string; generation: number; container_id: string | null; pending_action: string | null; native_resume_lost_at: Date | null }>();
  const receipts = (groupId: string) => stack.t.db('agent_sandbox_archives').where({ group_id: groupId })
    .select<Array<{ generation: number; object_key: string; bytes: string; sha256: string; verified_by: string }>>();
  const exists = (containerId: string) => docker().getContainer(containerId).inspect().then(() => true, (err: { statusCode?: number }) => {
    if (err.statusCode === 404) return false;
    throw err;
  });
  const turnStates = async (jobId: string) => (await stack.t.db('agent_turns').where({ job_id: jobId }).orderBy('seq').select<Array<{ state: string; error: string | null }>>('state', 'error'));
  const objectsOf = async (groupId: string) => ((await raw.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `sandbox-archives/${groupId}/` }))).Contents ?? []).map((o) => o.Key);

  const reviewed = (jobId: string) => reviewedGroup(stack, jobId);

  /** A chat whose first turn completed, with a workspace and a member home worth restoring, then stopped by an operator. */
  async function stoppedGroup(): Promise<Group> {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Make a workspace', model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0]?.state === 'completed', 'the first turn completed', 90_000);
    const g = await reviewed(jobId);
    const made = await execIn(docker().getContainer(g.containerId), ['su', '-s', '/bin/sh', 'member-10001', '-c', [
      'set -e; cd /workspace',
      'mkdir -p src/deep/er empty',
      'head -c 3000000 /dev/urandom > src/blob.bin',
      'printf "hello\\n" > src/deep/er/hello.txt',
      'printf "#!/bin/sh\\necho run\\n" > run.sh && chmod 750 run.sh',
      'ln -s src/deep/er/hello.txt link-to-hello',
      'git add -A >/dev/null && git -c user.email=a@b -c user.name=a commit -qm work',
      'printf "{\\"session\\":1}" > /home/member-10001/.agent/session.json',
    ].join('; ')]);
    assert.equal(made.exitCode, 0, made.output);
    const stop = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/stop`, { container_id: g.containerId, generation: g.generation, last_activity_at: g.lastActivityAt });
    assert.equal(stop.status, 202, JSON.stringify(stop.body));
    await waitFor(async () => (await row(g.groupId))?.state === 'stopped', 'the group stopped', 60_000);
    return g;
  }

  /** The archived paths of a container as listed by `TREE`; a stopped container is started for the look and stopped again. */
  async function tree(containerId: string): Promise<string> {
    const container = docker().getContainer(containerId);
    const wasRunning = (await container.inspect()).State.Running;
    if (!wasRunning) await container.start();
    const listed = await execIn(container, ['sh', '-c', TREE]);
    if (!wasRunning) await container.stop({ t: 1 });
    assert.equal(listed.exitCode, 0, listed.output);
    return listed.output;
  }

  it('archives a stopped group (receipt only after verification, then the container goes, cold), and a new turn restores the exact workspace', async () => {
    const g = await stoppedGroup();
    const before = await tree(g.containerId);
    assert.match(before, /workspace\/src\/blob\.bin f 644/);
    assert.match(before, /home\/member-10001\/\.agent\/session\.json/);

    const archived = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation });
    assert.equal(archived.status, 202, JSON.stringify(archived.body));
    assert.equal(archived.body.state, 'archiving');
    await waitFor(async () => (await row(g.groupId))?.state === 'cold', 'the group cold', 120_000);
    assert.equal(await exists(g.containerId), false, 'the container was removed');
    const cold = await row(g.groupId);
    assert.equal(cold?.container_id, null);
    assert.equal(cold?.native_resume_lost_at, null, 'native sessions are in the archive');
    const [receipt, ...more] = await receipts(g.groupId);
    assert.ok(receipt);
    assert.equal(more.length, 0);
    assert.equal(receipt.object_key, `sandbox-archives/${g.groupId}/g${g.generation}.tar`);
    assert.deepEqual(await objectsOf(g.groupId), [receipt.object_key], 'exactly one object');
    const readBack = await store.verify(receipt.object_key, { length: Number(receipt.bytes), sha256: receipt.sha256 }, { readBack: true });
    assert.equal(readBack.status, 'verified', 'the stored bytes are the receipt\'s');
    const audit = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: g.groupId, action: 'agent.sandbox.archive_delete' })
      .select<Array<{ outcome: string; details: { state?: string } }>>('outcome', 'details');
    assert.deepEqual(audit.map((a) => [a.outcome, a.details.state]), [['succeeded', 'cold']]);
    // Cold: the workspace download has nothing to read.
    assert.equal((await ownerCall(stack, 'GET', `/v1/agent/jobs/${g.jobId}/workspace/archive`)).status, 409);

    const turn = await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Carry on' });
    assert.equal(turn.status, 201, await turn.clone().text());
    await waitFor(async () => (await turnStates(g.jobId))[1]?.state === 'completed', 'the turn after the restore completed', 120_000);
    const restored = await row(g.groupId);
    assert.equal(restored?.state, 'running');
    assert.equal(restored?.generation, g.generation + 1, 'a new generation');
    assert.ok(restored?.container_id && restored.container_id !== g.containerId);
    const info = await docker().getContainer(restored.container_id).inspect();
    assert.equal(info.Config.Labels?.['agent.generation'], String(g.generation + 1));
    // The turn after the restore carried on the built-in driver's native session: that file (and its directory's time) moved on.
    const settled = (listing: string) => listing.split('\n').filter((line) => !/builtin-session\.json|^home\/member-10001\/\.agent d /.test(line)).join('\n');
    assert.equal(settled(await tree(restored.container_id)), settled(before), 'the same tree, modes, owners, times and bytes');
    assert.match(await tree(restored.container_id), /builtin-session\.json/);
  });

  it('refuses an archive of a running group, a wrong generation, an unknown group and a malformed body; nothing changes', async () => {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Stay running', model: AGENT_MODEL, repo: null });
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0]?.state === 'completed', 'the first turn completed', 90_000);
    const g = await reviewed(jobId);
    const before = await row(g.groupId);
    const running = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation });
    assert.equal(running.status, 409, JSON.stringify(running.body));
    assert.match(running.body.error?.message ?? '', /needs it stopped or dead/);
    assert.equal((await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation + 3 })).status, 409);
    assert.equal((await admin('POST', '/admin/agent/sandboxes/grp_nosuchgroup/archive', { container_id: g.containerId, generation: 1 })).status, 404);
    const malformed = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: '1' });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error?.param, 'generation');
    assert.deepEqual(await row(g.groupId), before);
    assert.deepEqual(await receipts(g.groupId), []);
    assert.deepEqual(await objectsOf(g.groupId), []);
  });

  it('an object that fails verification is never committed: the container stays, the group returns to stopped, the object is removed', async () => {
    const g = await stoppedGroup();
    store.corruptNextVerify = true;
    const archived = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation });
    assert.equal(archived.status, 202, JSON.stringify(archived.body));
    await waitFor(async () => {
      const r = await row(g.groupId);
      return r?.state === 'stopped' && r.pending_action === null;
    }, 'the group back to stopped', 120_000);
    assert.equal(await exists(g.containerId), true, 'the container is kept');
    assert.deepEqual(await receipts(g.groupId), []);
    assert.deepEqual(await objectsOf(g.groupId), [], 'the unverified object was removed');
    const audit = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: g.groupId, action: 'agent.sandbox.archive_delete' })
      .select<Array<{ outcome: string; reason: string | null }>>('outcome', 'reason');
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.outcome, 'failed');
    assert.match(audit[0]!.reason ?? '', /does not match.*container is kept/);

    // The same archive again, verified this time: it goes through.
    const again = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation });
    assert.equal(again.status, 202, JSON.stringify(again.body));
    await waitFor(async () => (await row(g.groupId))?.state === 'cold', 'the group cold', 120_000);
  });

  it('a corrupted archive is never restored: the turn fails for the owner, the group stays cold with no container; the right bytes restore it', async () => {
    const g = await stoppedGroup();
    const archived = await admin('POST', `/admin/agent/sandboxes/${g.groupId}/archive`, { container_id: g.containerId, generation: g.generation });
    assert.equal(archived.status, 202, JSON.stringify(archived.body));
    await waitFor(async () => (await row(g.groupId))?.state === 'cold', 'the group cold', 120_000);
    const [receipt] = await receipts(g.groupId);
    assert.ok(receipt);
    const original = Buffer.from(await (await raw.send(new GetObjectCommand({ Bucket: bucket, Key: receipt.object_key }))).Body!.transformToByteArray());
    const flipped = Buffer.from(original);
    flipped[flipped.length >> 1] = flipped[flipped.length >> 1]! ^ 0xff;
    await raw.send(new DeleteObjectCommand({ Bucket: bucket, Key: receipt.object_key }));
    await raw.send(new PutObjectCommand({ Bucket: bucket, Key: receipt.object_key, Body: flipped }));

    const turn = await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Carry on' });
    assert.equal(turn.status, 201);
    const failed = await waitFor(async () => {
      const t = (await turnStates(g.jobId))[1];
      return t?.state === 'failed' ? t : undefined;
    }, 'the turn failed', 120_000);
    assert.match(failed.error ?? '', /does not have the receipt's SHA-256/);
    const after = await row(g.groupId);
    assert.equal(after?.state, 'cold');
    const left = await docker().listContainers({ all: true, filters: { label: [`agent.group=${g.groupId}`] } });
    assert.deepEqual(left, [], 'the container made for the restore was removed');

    await raw.send(new DeleteObjectCommand({ Bucket: bucket, Key: receipt.object_key }));
    await raw.send(new PutObjectCommand({ Bucket: bucket, Key: receipt.object_key, Body: original }));
    const retry = await ownerCall(stack, 'POST', `/v1/agent/jobs/${g.jobId}/turns`, { prompt: 'Try again' });
    assert.equal(retry.status, 201);
    await waitFor(async () => (await turnStates(g.jobId))[2]?.state === 'completed', 'the turn after the repair completed', 120_000);
    assert.equal((await row(g.groupId))?.state, 'running');
  });

  it('with a bucket, the deletion sweep archives the last chat\'s sandbox before removing it (cold, one verified object)', async () => {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'A chat to delete', model: AGENT_MODEL, repo: null });
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await turnStates(jobId))[0]?.state === 'completed', 'the first turn completed', 90_000);
    const g = await reviewed(jobId);
    assert.equal((await ownerCall(stack, 'DELETE', `/v1/agent/jobs/${jobId}`)).status, 200);
    assert.equal((await ownerCall(stack, 'DELETE', `/v1/agent/jobs/${jobId}?permanent=true`)).status, 202);
    const schedule = stack.env.client.schedule.getHandle(await ensureDeletionSweepSchedule(stack.env.client, stack.settings));
    await schedule.trigger();
    await waitFor(async () => (await stack.t.db('agent_deletion_requests').where({ job_id: jobId }).first<{ state: string }>('state'))?.state === 'done', 'the request done', 180_000);
    assert.equal((await row(g.groupId))?.state, 'cold', 'stopped, archived, then removed');
    assert.equal(await exists(g.containerId), false);
    const [receipt] = await receipts(g.groupId);
    assert.ok(receipt);
    assert.deepEqual(await objectsOf(g.groupId), [receipt.object_key]);
    assert.equal((await store.verify(receipt.object_key, { length: Number(receipt.bytes), sha256: receipt.sha256 }, { readBack: true })).status, 'verified');
    const sandboxAudit = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: g.groupId }).orderBy('id')
      .select<Array<{ action: string; outcome: string; actor_name: string | null; category: string }>>('action', 'outcome', 'actor_name', 'category');
    assert.deepEqual(sandboxAudit.map((a) => [a.action, a.outcome, a.actor_name, a.category]), [
      ['agent.sandbox.stop_idle', 'succeeded', 'user-deletion-sweeper', 'deletion'],
      ['agent.sandbox.archive_delete', 'succeeded', 'user-deletion-sweeper', 'deletion'],
    ]);
  });
});
