/**
 * Each internal HTTP contract of lib/contracts/ is the one both sides use (real PostgreSQL, API
 * and gateway): every endpoint is a route of its server (and its server has no other route under
 * the contract's prefix); a server that reads a body validates it with the contract's request
 * schema object itself, and the real client parses the answer with the contract's response schema
 * object itself. Both are observed by wrapping `safeParse` of those very objects: a copied schema
 * on either side leaves its wrapper uncalled and fails here.
 */
import assert from 'node:assert/strict';
import type { z } from 'zod';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { ApiEventSink } from '../../activities/agent/api-event-sink';
import { HostApiClient } from '../../activities/agent/host-api-client';
import type { Endpoint } from '../../lib/contracts/endpoint';
import { grantDispatchEndpoints, grantIssue, grantRenew, modelCheck } from '../../lib/contracts/grant-dispatch';
import { attemptEvents, attemptPatch, attemptQuestionExpire, hostApiEndpoints, hostHeartbeat, hostInventory } from '../../lib/contracts/host-api';
import { hostSshEndpoints } from '../../lib/contracts/host-ssh';
import type { RouteEntry } from '../../lib/http/route-access';
import { createHeartbeat } from '../../workers/host-heartbeat';
import { createInventoryReporter } from '../../workers/host-inventory';
import { docker, TEST_DISK_ROOT } from '../support/docker';
import { DISPATCH_TOKEN, insertOwner, insertResidency, startGrantGateway, type Residency } from '../support/agent-grants';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { captureLogs } from '../support/logs';
import type { TestGateway } from '../support/gateway';

interface Spy {
  /** The values `safeParse` was called with. */
  calls: unknown[];
  restore(): void;
}

/** Records every `safeParse` call of this schema object (and of no copy of it). */
function spyOnSafeParse(schema: z.ZodType): Spy {
  const own = Object.getOwnPropertyDescriptor(schema, 'safeParse');
  const original = schema.safeParse.bind(schema);
  const calls: unknown[] = [];
  schema.safeParse = ((data: unknown, params?: Parameters<typeof original>[1]) => {
    calls.push(data);
    return original(data, params);
  });
  return {
    calls,
    restore: () => {
      if (own) Object.defineProperty(schema, 'safeParse', own);
      else delete (schema as { safeParse?: unknown }).safeParse;
    },
  };
}

/** Spies on the request and response schema of each endpoint, restoring them afterwards. */
function spyOnEndpoints(endpoints: readonly Endpoint[]) {
  const spies = new Map<Endpoint, { request: Spy; response: Spy }>();
  for (const e of endpoints) spies.set(e, { request: spyOnSafeParse(e.request), response: spyOnSafeParse(e.response) });
  return {
    of: (e: Endpoint) => spies.get(e)!,
    restore: () => { for (const s of spies.values()) { s.request.restore(); s.response.restore(); } },
  };
}

function assertServed(routes: readonly RouteEntry[], endpoints: readonly Endpoint[], prefix: string): void {
  for (const e of endpoints) {
    assert.ok(routes.some((r) => r.path === e.route && r.methods.includes(e.method)), `${e.method} ${e.route} (${e.name}) is served`);
  }
  const outside = routes.filter((r) => r.path.startsWith(prefix) && !endpoints.some((e) => e.route === r.path));
  assert.deepEqual(outside.map((r) => r.path), [], `every route under ${prefix} is in the contract`);
}

describe('internal HTTP contracts: one schema on both sides (PostgreSQL + API + gateway)', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let gw: TestGateway;
  let api: TestApi;
  let grants: GatewayGrantClient;
  let owner: number;
  let residency: Residency;

  before(async () => {
    t = await freshDatabase();
    gw = await startGrantGateway(t.db, 'http://127.0.0.1:9');
    grants = new GatewayGrantClient({ gatewayUrl: gw.url, dispatchToken: DISPATCH_TOKEN });
    api = await startTestApi({ db: t.db, grants });
    owner = await insertOwner(t.db, 'contracts@example.com');
    residency = await insertResidency(t.db, { ownerId: owner, model: 'm', hostId: 'contract-host' });
    await t.db('agent_sandbox_members').insert({ job_id: residency.jobId, group_id: residency.groupId, uid: 1001 });
  });
  after(async () => {
    await api?.close();
    await gw?.close();
    await t?.drop();
  });

  it('serves every endpoint of each contract, and nothing under its prefix outside it', () => {
    assertServed(api.routes, [...hostApiEndpoints, ...hostSshEndpoints], '/v1/agent/hosts/');
    assertServed(gw.routes, grantDispatchEndpoints, '/internal/');
  });

  it('host runner API: the API validates with the contract’s request schemas, the runner’s clients parse with its response schemas', async () => {
    const spies = spyOnEndpoints(hostApiEndpoints);
    try {
      const { hostId, hostCredential: credential, attemptId } = residency;
      const beat = await createHeartbeat({ apiUrl: api.url, hostId, credential, defaultSlots: 2, runtime: 'docker-test', log: captureLogs('host').log }).beatOnce();
      assert.equal(beat.ok, true, JSON.stringify(beat));
      const client = new HostApiClient({ apiUrl: api.url, hostId, credential });
      assert.equal((await client.attemptContext(attemptId)).uid, 1001);
      assert.match((await client.turnGrant(attemptId)).token, /^agr_/);
      assert.equal(await client.cloneCredential(attemptId), undefined, 'a job without a repository needs no clone credential');
      assert.match((await client.toolCredentials(attemptId)).residency_credential, /^amr\./);
      const sink = new ApiEventSink({ apiUrl: api.url, hostId, credential, attemptId });
      await sink.emit('message', { text: 'hi' });
      await sink.emit('question', { request_id: 'rq-contract', cli: 'codex', questions: [{ id: 'q', header: 'Q', question: 'Which?', multi_select: false, options: [] }] });
      assert.equal((await client.questionState(attemptId, 'rq-contract')).state, 'pending');
      assert.equal((await client.expireQuestion(attemptId, 'rq-contract')).state, 'expired');
      assert.equal((await client.uploadPatch(attemptId, { status: 'failed', error: 'contract test' })).stored, true);
      // This host id labels no container: the report is empty, and its answer orders nothing.
      const inventory = await createInventoryReporter({ apiUrl: api.url, hostId, credential, docker: docker(), log: captureLogs('host').log, diskEveryMs: 0, sandboxDiskDir: TEST_DISK_ROOT }).reportOnce();
      assert.deepEqual(inventory, { ok: true, reported: 0, answer: { remove: [], observed: 0, orphans: 0, marked_dead: 0 }, removals: {} });

      for (const e of hostApiEndpoints) assert.equal(spies.of(e).response.calls.length, e === attemptEvents ? 2 : 1, `the client parsed the ${e.name} answer with the contract's schema`);
      for (const e of [hostHeartbeat, attemptQuestionExpire, attemptPatch, hostInventory]) assert.equal(spies.of(e).request.calls.length, 1, `the API validated the ${e.name} body with the contract's schema`);
      assert.equal(spies.of(attemptEvents).request.calls.length, 2, 'the API validated both event batches with the contract');
      assert.deepEqual(spies.of(attemptEvents).request.calls[0], { events: [{ seq: 0, event_type: 'message', payload: { text: 'hi' }, is_error: false }] });
    } finally {
      spies.restore();
    }
  });

  it('grant dispatch: the gateway validates with the contract’s request schemas, GatewayGrantClient parses with its response schemas', async () => {
    const spies = spyOnEndpoints(grantDispatchEndpoints);
    try {
      assert.deepEqual(await grants.checkModel(owner, 'm'), { model: 'm' });
      const issued = await grants.issue({ userId: owner, model: 'm', kind: 'prompt_rewrite', operationId: 'prompt-rewrite-contract-test' });
      const turn = await grants.issue({ userId: owner, model: 'm', kind: 'turn', jobId: residency.jobId, attemptId: `${residency.attemptId}-x`, hostId: residency.hostId, ttlSeconds: 60 });
      assert.notEqual(await grants.renew(turn.grantId, 120), 'gone');
      await grants.revoke(issued.grantId);

      for (const e of grantDispatchEndpoints) assert.ok(spies.of(e).response.calls.length >= 1, `the client parsed the ${e.name} answer with the contract's schema`);
      for (const e of [grantIssue, modelCheck, grantRenew]) assert.ok(spies.of(e).request.calls.length >= 1, `the gateway validated the ${e.name} body with the contract's schema`);
      assert.deepEqual(spies.of(modelCheck).request.calls[0], { user_id: owner, model: 'm' });
      assert.deepEqual(spies.of(grantRenew).request.calls[0], { ttl_seconds: 120 });
    } finally {
      spies.restore();
    }
  });
});
