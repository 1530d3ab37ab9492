/**
 * The whole agent control plane for integration tests, in this process but over real things: a
 * fresh PostgreSQL database, a gateway on 127.0.0.1 with a fake LLM upstream behind model
 * `agent-model`, the control-plane API, the Temporal dev server with a control worker (its own task
 * queue) and a host runner (its own enrolled host, heartbeating to the API, running sandboxes on
 * the real Docker engine), and an owner with `agent.use` and an API key.
 */
import type { SandboxRuntimes } from '../../activities/docker/container-runtime';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createControlActivities, type ControlActivityDeps } from '../../activities/control';
import { publicStatsJob } from '../../gateway/ops/public-stats/snapshot';
import { createHostActivities } from '../../activities/host-activities';
import { GatewayGrantClient } from '../../agent/grants/gateway-grant-client';
import { HostApiClient } from '../../activities/agent/host-api-client';
import { enrollHost } from '../../agent/hosts/host-registry';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsObjectStore, type ObjectStore } from '../../lib/object-store';
import { loadSettings, type Settings } from '../../lib/settings';
import { createHeartbeat, type Heartbeat } from '../../workers/host-heartbeat';
import { hostTaskQueue } from '../../workflows/definitions/task-queues';
import { ADMIN_TOKEN } from './admin';
import { createKey, postJson, signUpAndLogIn } from './accounts';
import { startTestApi, TEST_JWT_SECRET, type TestApi } from './api';
import { freshDatabase, type TestDatabase } from './db';
import { containerCommands, docker, SANDBOX_IMAGE, testLabels, removeContainers, testRunId, testPreflight, TEST_DISK_ROOT, TEST_RUNTIMES } from './docker';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { startTestGateway, type TestGateway } from './gateway';
import { captureLogs, type CapturedLogs } from './logs';
import { temporalEnv, uniqueTaskQueue, workflowBundle } from './temporal';
import { endHostWorkflows } from './host-workflows';
import { relayRoot } from '../../agent/sandboxes/names';

export const DISPATCH_TOKEN = 'test-dispatch-token-0123456789-abcdefghij';
export const AGENT_MODEL = 'agent-model';

export interface AgentStack {
  t: TestDatabase;
  upstream: FakeUpstream;
  gateway: TestGateway;
  api: TestApi;
  env: TestWorkflowEnvironment;
  settings: Settings;
  hostId: string;
  hostCredential: string;
  heartbeat: Heartbeat;
  /** The owner's API key (`agent.use`). */
  ownerKey: string;
  controlQueue: string;
  /** Log lines of the in-process control worker's activities (e.g. `agent_title_generation_failed`). */
  controlLogs: CapturedLogs;
  /** Starts (again) the in-process control worker / host runner; `stop*` shuts them down. */
  startControl(): Promise<void>;
  stopControl(): Promise<void>;
  /** Starts the host worker; `runtimes` replaces the suite's ({@link TEST_RUNTIMES}) for this start. */
  startHost(options?: { runtimes?: SandboxRuntimes }): Promise<void>;
  stopHost(): Promise<void>;
  close(): Promise<void>;
}

export interface AgentStackOptions {
  slots?: number;
  env?: Record<string, string>;
  /** `none`: start no control worker or host runner (a test runs them as processes); default in-process. */
  workers?: 'in-process' | 'none';
  /** Connections of the one pool the API, workers and gateway share here (default 5). */
  poolMax?: number;
  /** The object store of the API, the control worker and the host runner (default an fs store in a temporary directory). */
  objectStore?: ObjectStore;
  /** USD per 1M tokens of `agent-model` (`pricing`, docs/pricing.md); unpriced by default. */
  pricing?: { prompt: string; completion: string };
  /** More YAML fields of `agent-model`'s entry, e.g. `supports_tools: true` (written after a comma). */
  modelFields?: string;
  /** `agent-model`'s upstream base URL (with `/v1`) instead of the stack's fake upstream, e.g. the demo upstream. */
  upstreamUrl?: string;
  /** The forge of the control worker's publisher (docs/publisher.md); without it completed turns are not published. */
  forgeFor?: ControlActivityDeps['forgeFor'];
  /** More gateway environment (e.g. `CONSOLE_DIR` for console tests), after the stack's own. */
  gatewayEnv?: Record<string, string>;
  /**
   * One origin (docs/one-origin.md): the gateway forwards the agent API's paths to the stack's API
   * (`GATEWAY_AGENT_API_URL`), as `npm start` runs it; the API then listens on a port chosen first.
   */
  oneOrigin?: boolean;
  /** The Temporal environment instead of the run's shared one (e.g. a private server a test kills). */
  temporal?: TestWorkflowEnvironment;
}

/** Grants `agent.use` to the account behind `session` through the admin API, and makes a key. */
export async function makeOwner(gatewayUrl: string, t: TestDatabase, email: string): Promise<string> {
  const session = await signUpAndLogIn(gatewayUrl, t.db, email);
  const user = await t.db('users').whereRaw('lower(email) = lower(?)', [email]).first<{ id: string }>('id');
  const res = await fetch(`${gatewayUrl}/admin/users/${user.id}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ permissions: ['agent.use'] }),
  });
  if (!res.ok) throw new Error(`granting agent.use failed: ${res.status} ${await res.text()}`);
  return createKey(gatewayUrl, session, 'agent');
}

export async function startAgentStack(options: AgentStackOptions = {}): Promise<AgentStack> {
  const t = await freshDatabase({ poolMax: options.poolMax });
  const upstream = await startFakeUpstream();
  const apiPort = options.oneOrigin ? await freeLoopbackPort() : 0;
  const forwarding: Record<string, string> = options.oneOrigin ? { GATEWAY_AGENT_API_URL: `http://127.0.0.1:${apiPort}` } : {};
  const gateway = await startTestGateway({
    db: t.db,
    modelsYaml: `models:\n  - { id: ${AGENT_MODEL}, name: Agent model, provider: generic_compat, base_url: "${options.upstreamUrl ?? upstream.url}", api_key: upstream-key${
      options.pricing ? `, pricing: { prompt: "${options.pricing.prompt}", completion: "${options.pricing.completion}" }` : ''}${options.modelFields ? `, ${options.modelFields}` : ''} }\n`,
    env: { USER_AUTH_ENABLED: 'true', ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN, SIGNUP_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false', ...forwarding, ...options.gatewayEnv },
  });
  const env = options.temporal ?? await temporalEnv();
  const controlQueue = uniqueTaskQueue('control');
  const hostId = `th-${testRunId}-${Math.random().toString(36).slice(2, 8)}`.toLowerCase().replace(/[^a-z0-9._-]/g, '-');
  const apiEnv = {
    TEMPORAL_CONTROL_TASK_QUEUE: controlQueue, GATEWAY_GRANT_DISPATCH_TOKEN: DISPATCH_TOKEN, AGENT_GATEWAY_URL: gateway.url,
    AGENT_TURN_HEARTBEAT_TIMEOUT_SECONDS: '5', AGENT_GRANT_RENEW_SECONDS: '2', AGENT_HOST_SLOTS: String(options.slots ?? 3),
    // Title generation calls the same fake upstream as turns and would take their scripted answers;
    // test/integration/agent-titles.test.ts turns it on.
    AGENT_HOST_ID: hostId, AGENT_TITLE_GENERATION_ENABLED: 'false',
    // A control worker (in a process, or a test calling its startup) keeps the deletion sweep's and
    // the idle stop's Schedules under these ids: never the deployment's, and deleted by close().
    AGENT_DELETION_SWEEP_SCHEDULE_ID: `test-deletion-sweep-${controlQueue}`, AGENT_IDLE_STOP_SCHEDULE_ID: `test-idle-stop-${controlQueue}`, ...options.env,
  };
  const settings = loadSettings({ ADMIN_TOKEN, AUTH_JWT_SECRET: TEST_JWT_SECRET, ...apiEnv });
  const grants = new GatewayGrantClient({ gatewayUrl: gateway.url, dispatchToken: DISPATCH_TOKEN });
  const objectStore = options.objectStore ?? new FsObjectStore(mkdtempSync(join(tmpdir(), 'agent-store-')));
  const api = await startTestApi({ db: t.db, temporal: env.client, env: apiEnv, grants, objectStore, port: apiPort });
  const { credential } = await enrollHost(t.db, hostId);
  // The host attests what a real preflight of this machine's runtimes saw (once per test process).
  const preflight = await testPreflight();
  const heartbeat = createHeartbeat({
    apiUrl: api.url, hostId, credential, defaultSlots: settings.AGENT_HOST_SLOTS, runtime: 'docker-test', log: captureLogs('heartbeat').log,
    attestation: () => ({ capabilities: ['container', ...preflight.attestations], preflight }),
  });
  await heartbeat.beatOnce();
  heartbeat.start(1000);
  const ownerKey = await makeOwner(gateway.url, t, `owner-${hostId}@example.com`);

  const controlLogs = captureLogs('control-activities');
  let control: { worker: Worker; running: Promise<void> } | undefined;
  let host: { worker: Worker; running: Promise<void> } | undefined;
  const stack: AgentStack = {
    t, upstream, gateway, api, env, settings, hostId, hostCredential: credential, heartbeat, ownerKey, controlQueue, controlLogs,
    async startControl() {
      const worker = await Worker.create({
        connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: controlQueue,
        workflowBundle: await workflowBundle(),
        // The API's synced settings (same database): admission reads the saved host settings as the control worker does.
        activities: createControlActivities({
          db: t.db, settings, grants, log: controlLogs.log, objectStore, temporal: env.client, agentSettings: api.deps.agentSettings,
          ...(options.forgeFor ? { forgeFor: options.forgeFor } : {}), publicStats: publicStatsJob(t.db, settings.DB_STORE_FULL_CONTENT),
        }),
      });
      control = { worker, running: worker.run() };
    },
    async stopControl() {
      if (!control) return;
      control.worker.shutdown();
      await control.running;
      control = undefined;
    },
    async startHost(hostOptions = {}) {
      const worker = await Worker.create({
        connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: hostTaskQueue(hostId),
        activities: createHostActivities({
          docker: docker(), hostId, image: SANDBOX_IMAGE, sandboxDiskDir: TEST_DISK_ROOT, sandboxLabels: testLabels(), objectStore, relayRoot: relayRoot(settings.AGENT_RELAY_DIR),
          runtimes: hostOptions.runtimes ?? TEST_RUNTIMES,
          turns: {
            api: new HostApiClient({ apiUrl: api.url, hostId, credential }), apiUrl: api.url, credential,
            gatewayUrl: gateway.url, settings, relayRoot: relayRoot(settings.AGENT_RELAY_DIR),
          },
        }),
      });
      host = { worker, running: worker.run() };
    },
    async stopHost() {
      if (!host) return;
      host.worker.shutdown();
      await host.running;
      host = undefined;
    },
    async close() {
      heartbeat.stop();
      await stack.stopHost().catch(() => undefined);
      await stack.stopControl().catch(() => undefined);
      // The heartbeat route started the host's workflow (host:<hostId>); it would otherwise run on in the shared dev server.
      await endHostWorkflows(env.client, [hostId]);
      for (const id of [settings.AGENT_DELETION_SWEEP_SCHEDULE_ID, settings.AGENT_IDLE_STOP_SCHEDULE_ID]) await env.client.schedule.getHandle(id).delete().catch(() => undefined);
      await removeContainers({ 'agent.host': hostId });
      await api.close();
      await gateway.close();
      await upstream.close();
      await t.drop();
    },
  };
  if (options.workers === 'none') {
    heartbeat.stop();
    return stack;
  }
  await stack.startControl();
  await stack.startHost();
  return stack;
}

/** Owner-authenticated JSON call to the API. */
export async function ownerCall(stack: AgentStack, method: string, path: string, body?: unknown, key = stack.ownerKey): Promise<Response> {
  if (method === 'POST') return postJson(`${stack.api.url}${path}`, body ?? {}, { authorization: `Bearer ${key}` });
  return fetch(`${stack.api.url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
}

export { docker, containerCommands };

/** What an operator reviews in the inventory for a chat's sandbox group. */
export interface ReviewedGroup {
  groupId: string;
  jobId: string;
  containerId: string;
  generation: number;
  lastActivityAt: string;
}

/** The chat's group as `GET /admin/agent/sandboxes?state=all` lists it (fails when it is not listed). */
export async function reviewedGroup(stack: AgentStack, jobId: string): Promise<ReviewedGroup> {
  const { group_id: groupId } = await stack.t.db('agent_jobs').where({ job_id: jobId }).first<{ group_id: string }>('group_id');
  const res = await fetch(`${stack.api.url}/admin/agent/sandboxes?state=all`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const entry = ((await res.json()) as { sandboxes: Array<Record<string, unknown>> }).sandboxes.find((s) => s.group_id === groupId);
  if (!entry) throw new Error(`group ${groupId} of ${jobId} is not in the inventory`);
  return { groupId, jobId, containerId: String(entry.container_id), generation: Number(entry.generation), lastActivityAt: String(entry.last_activity_at) };
}
