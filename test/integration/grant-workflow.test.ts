/**
 * The grant workflow on the real Temporal dev server with its activities over real PostgreSQL and
 * a real gateway: it renews a turn's grant while the residency is alive, revokes it when the host
 * goes stale, the attempt ends or the container generation changes, and on the `release` signal.
 */
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createGrantActivities } from '../../activities/grants/grant-activities';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import type { grantWorkflow } from '../../workflows/grant';
import { GRANT_WORKFLOW_TYPE, grantWorkflowId, releaseGrantSignal, type GrantWorkflowInput } from '../../workflows/definitions/grant';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { DISPATCH_TOKEN, insertOwner, startGrantGateway, insertResidency, type Residency } from '../support/agent-grants';
import type { TestGateway } from '../support/gateway';
import { freshDatabase, type TestDatabase } from '../support/db';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { temporalEnv, uniqueTaskQueue, workflowBundle } from '../support/temporal';
import { waitFor } from '../support/wait';

describe('grant workflow (Temporal + PostgreSQL + gateway)', function () {
  this.timeout(90_000);
  let env: TestWorkflowEnvironment;
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let grants: GatewayGrantClient;
  let owner: number;
  let worker: Worker;
  let running: Promise<void>;
  let taskQueue: string;
  let host = 0;

  const chat = (token: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const expiresAt = async (grantId: string) =>
    (await t.db('agent_grants').where({ grant_id: grantId }).first<{ expires_at: Date }>('expires_at')).expires_at.getTime();
  const revokedAt = async (grantId: string) =>
    (await t.db('agent_grants').where({ grant_id: grantId }).first<{ revoked_at: Date | null }>('revoked_at'))?.revoked_at ?? null;

  /** A residency with its grant issued for 30 s (renewals extend it to AGENT_GRANT_TTL_SECONDS = 120 s). */
  const residencyWithGrant = async (): Promise<{ r: Residency; grantId: string; token: string }> => {
    host += 1;
    const r = await insertResidency(t.db, { ownerId: owner, model: 'm', hostId: `wf-host-${host}` });
    const grant = await grants.issue({ userId: owner, model: 'm', kind: 'turn', jobId: r.jobId, attemptId: r.attemptId, hostId: r.hostId, groupId: r.groupId, generation: r.generation, ttlSeconds: 30 });
    return { r, grantId: grant.grantId, token: grant.token };
  };
  const start = (r: Residency, grantId: string) => {
    const input: GrantWorkflowInput = { grantId, attemptId: r.attemptId, hostId: r.hostId, groupId: r.groupId, generation: r.generation, renewEverySeconds: 1 };
    return env.client.workflow.start<typeof grantWorkflow>(GRANT_WORKFLOW_TYPE, { taskQueue, workflowId: `${grantWorkflowId(grantId)}:${Date.now()}`, args: [input] });
  };

  before(async () => {
    env = await temporalEnv();
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    gw = await startGrantGateway(t.db, upstream.url);
    grants = new GatewayGrantClient({ gatewayUrl: gw.url, dispatchToken: DISPATCH_TOKEN });
    owner = await insertOwner(t.db, 'owner@example.com');
    taskQueue = uniqueTaskQueue('control');
    worker = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createGrantActivities({ db: t.db, grants, settings: { AGENT_HOST_STALE_SECONDS: 90, AGENT_GRANT_TTL_SECONDS: 120 } }),
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await gw?.close();
    await upstream?.close();
    await t?.drop();
  });

  it('renews the grant while the host heartbeats, and revokes it on release', async () => {
    const { r, grantId, token } = await residencyWithGrant();
    const issuedUntil = await expiresAt(grantId);
    const handle = await start(r, grantId);
    await waitFor(async () => (await expiresAt(grantId)) > issuedUntil + 60_000, 'a renewal to extend the grant');
    const firstRenewal = await expiresAt(grantId);
    await waitFor(async () => (await expiresAt(grantId)) > firstRenewal, 'a second renewal');
    assert.equal((await chat(token)).status, 200);
    const description = await handle.describe();
    assert.deepEqual(description.typedSearchAttributes.get(searchAttributes.host), r.hostId);
    assert.deepEqual(description.typedSearchAttributes.get(searchAttributes.state), 'renewing');

    await handle.signal(releaseGrantSignal);
    assert.equal(await handle.result(), 'released');
    assert.ok(await revokedAt(grantId), 'released grants are revoked');
    await waitFor(async () => (await chat(token)).status === 401, 'the revoked token to be refused');
    assert.equal((await handle.describe()).typedSearchAttributes.get(searchAttributes.state), 'released');
  });

  it('revokes the grant and ends with residency_lost when the host heartbeat goes stale', async () => {
    const { r, grantId, token } = await residencyWithGrant();
    const handle = await start(r, grantId);
    await t.db('agent_hosts').where({ host_id: r.hostId }).update({ last_heartbeat_at: t.db.raw("now() - interval '5 minutes'") });
    assert.equal(await handle.result(), 'residency_lost');
    assert.ok(await revokedAt(grantId));
    await waitFor(async () => (await chat(token)).status === 401, 'the revoked token to be refused');
  });

  it('revokes the grant when the attempt ends or the container generation changes', async () => {
    const ended = await residencyWithGrant();
    const moved = await residencyWithGrant();
    const endedRun = await start(ended.r, ended.grantId);
    const movedRun = await start(moved.r, moved.grantId);
    await t.db('agent_attempts').where({ attempt_id: ended.r.attemptId }).update({ state: 'completed', finished_at: t.db.fn.now() });
    await t.db('agent_sandboxes').where({ group_id: moved.r.groupId }).update({ generation: moved.r.generation + 1 });
    assert.equal(await endedRun.result(), 'residency_lost');
    assert.equal(await movedRun.result(), 'residency_lost');
    assert.ok(await revokedAt(ended.grantId));
    assert.ok(await revokedAt(moved.grantId));
  });

  it('waits for a grant the host has not fetched yet, then renews it', async () => {
    host += 1;
    const r = await insertResidency(t.db, { ownerId: owner, model: 'm', hostId: `wf-host-${host}` });
    const grantId = `grant_${r.attemptId}`;
    const handle = await start(r, grantId);
    await waitFor(async () => {
      const history = await handle.fetchHistory();
      return (history.events ?? []).some((e) => e.activityTaskCompletedEventAttributes);
    }, 'a renewal round before the grant exists');
    const grant = await grants.issue({ userId: owner, model: 'm', kind: 'turn', jobId: r.jobId, attemptId: r.attemptId, hostId: r.hostId, groupId: r.groupId, generation: r.generation, ttlSeconds: 30 });
    assert.equal(grant.grantId, grantId);
    const issuedUntil = await expiresAt(grantId);
    await waitFor(async () => (await expiresAt(grantId)) > issuedUntil + 60_000, 'the renewal of the late grant');
    await handle.signal(releaseGrantSignal);
    assert.equal(await handle.result(), 'released');
  });
});
