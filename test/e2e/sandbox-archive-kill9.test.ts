/**
 * Kill -9 during an archive upload (issue 17 "Failure and bad input"): the built control worker and
 * host runner run as processes on a real S3 server (versitygw); while the host is uploading a
 * 256 MiB archive both are killed with SIGKILL and started again. The container is kept until the
 * archive is verified, the action resumes and finishes (cold), exactly one object exists, its bytes
 * are the receipt's, and the outcome is audited once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { ADMIN_TOKEN } from '../support/admin';
import { AGENT_MODEL, docker, ownerCall, startAgentStack, type AgentStack } from '../support/agent-stack';
import { startControlProcess, startHostProcess, type WorkerProcess } from '../support/agent-processes';
import { execIn } from '../support/docker';
import { testS3Store } from '../support/s3-server';
import { waitFor } from '../support/wait';
import type { S3ObjectStore } from '../../lib/object-store';
import { sandboxGroupWorkflowId } from '../../workflows/definitions/sandbox-group';

describe('archive upload survives kill -9 of the control worker and the host runner (processes, S3)', function () {
  this.timeout(400_000);
  let stack: AgentStack;
  let control: WorkerProcess | undefined;
  let host: WorkerProcess | undefined;
  let store: S3ObjectStore;
  let raw: S3Client;
  let bucket: string;
  let s3Env: Record<string, string>;
  const storeRoot = mkdtempSync(join(tmpdir(), 'archive-kill9-store-'));

  before(async () => {
    const s3 = await testS3Store('kill9');
    ({ store, client: raw, bucket } = s3);
    s3Env = {
      OBJECT_STORE_BACKEND: 's3', S3_ENDPOINT: s3.s3.endpoint, S3_BUCKET: bucket, S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: s3.s3.credentials.accessKeyId, S3_SECRET_ACCESS_KEY: s3.s3.credentials.secretAccessKey, S3_FORCE_PATH_STYLE: 'true',
    };
    stack = await startAgentStack({ workers: 'none', objectStore: store });
    control = await startControlProcess(stack, s3Env);
    host = await startHostProcess(stack, storeRoot, s3Env);
  });
  after(async () => {
    await control?.stop().catch(() => undefined);
    await host?.stop().catch(() => undefined);
    await stack?.close();
  });

  async function admin(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${stack.api.url}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  }
  const row = (groupId: string) => stack.t.db('agent_sandboxes').where({ group_id: groupId }).first<{ state: string; container_id: string | null; generation: number; last_activity_at: Date }>();

  it('keeps the container until the verified receipt, resumes the action, and leaves exactly one object', async () => {
    const res = await ownerCall(stack, 'POST', '/v1/agent/jobs', { prompt: 'Make a big workspace', model: AGENT_MODEL, repo: null });
    assert.equal(res.status, 201, await res.clone().text());
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(async () => (await stack.t.db('agent_turns').where({ job_id: jobId, seq: 1 }).first<{ state: string }>('state'))?.state === 'completed', 'first turn', 120_000);
    const { group_id: groupId } = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
    const g = await row(groupId);
    assert.ok(g?.container_id, 'the group has its container');
    const containerId = g.container_id;
    const made = await execIn(docker().getContainer(containerId), ['sh', '-c', 'head -c 268435456 /dev/urandom > /workspace/big.bin && sync']);
    assert.equal(made.exitCode, 0, made.output);
    const listed = await fetch(`${stack.api.url}/admin/agent/sandboxes?state=all`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const entry = ((await listed.json()) as { sandboxes: Array<{ group_id: string; last_activity_at: string }> }).sandboxes.find((s) => s.group_id === groupId)!;
    assert.equal((await admin(`/admin/agent/sandboxes/${groupId}/stop`, { container_id: containerId, generation: g.generation, last_activity_at: entry.last_activity_at })).status, 202);
    await waitFor(async () => (await row(groupId))?.state === 'stopped', 'stopped', 60_000);

    const archived = await admin(`/admin/agent/sandboxes/${groupId}/archive`, { container_id: containerId, generation: g.generation });
    assert.equal(archived.status, 202, JSON.stringify(archived.body));
    const handle = stack.env.client.workflow.getHandle(sandboxGroupWorkflowId(groupId));
    await waitFor(async () => (await handle.describe()).raw.pendingActivities?.some((a) => a.activityType?.name === 'uploadSandboxArchive'), 'the upload under way', 120_000);
    await Promise.all([host!.kill9(), control!.kill9()]);
    assert.equal((await row(groupId))?.state, 'archiving');
    assert.equal((await docker().getContainer(containerId).inspect()).Id, containerId, 'the container is kept while the archive is not committed');
    control = await startControlProcess(stack, s3Env);
    host = await startHostProcess(stack, storeRoot, s3Env);

    await waitFor(async () => (await row(groupId))?.state === 'cold', 'the group cold after the restarts', 240_000);
    await assert.rejects(docker().getContainer(containerId).inspect(), (err: { statusCode?: number }) => err.statusCode === 404);
    const receipts = await stack.t.db('agent_sandbox_archives').where({ group_id: groupId }).select<Array<{ object_key: string; bytes: string; sha256: string }>>();
    assert.equal(receipts.length, 1);
    const objects = (await raw.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `sandbox-archives/${groupId}/` }))).Contents ?? [];
    assert.deepEqual(objects.map((o) => o.Key), [receipts[0]!.object_key], 'exactly one object');
    assert.ok(Number(receipts[0]!.bytes) > 268_435_456);
    const verified = await store.verify(receipts[0]!.object_key, { length: Number(receipts[0]!.bytes), sha256: receipts[0]!.sha256 }, { readBack: true });
    assert.equal(verified.status, 'verified');
    const audit = await stack.t.db('agent_audit_log').where({ target_type: 'sandbox', target_id: groupId, action: 'agent.sandbox.archive_delete' }).select<Array<{ outcome: string }>>('outcome');
    assert.deepEqual(audit.map((a) => a.outcome), ['succeeded']);
  });
});
