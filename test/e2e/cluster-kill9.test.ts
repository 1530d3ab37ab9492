/**
 * The cluster shape on one machine (`npm run cluster`, ops/cluster/main.ts, started here exactly as
 * that command starts it, minus the bootstrap): 2 gateways behind HAProxy, the API, 2 control
 * workers and 2 host runners enrolled as two hosts, over the shared PostgreSQL (a fresh database)
 * and Temporal server, every port on 127.0.0.1. Chat completions go through HAProxy to a fake
 * upstream; agent chats (built-in driver, same upstream) are created through it too.
 *
 * Checked: both gateways served requests (HAProxy's `X-Served-By`) and both hosts ran turns
 * (`agent_attempts.host_id`). Then gateway-1 gets SIGKILL under load: clients see at most the
 * requests in flight on it fail (HAProxy sends new ones to gateway-2, redispatching a refused
 * connection), `npm run cluster -- start gateway-1` restarts it on its own spool directory, where
 * it replays the journal the dead process left, and after `npm run cluster -- stop` every 200 the
 * client read has exactly one request-log row: every one, also those gateway-1 answered while the
 * kill landed (an answer's last bytes wait for its row's journal write; docs/request-log.md
 * "Guarantees"). Before that, host-1 gets SIGKILL: once it is stale, new chats are placed on host-2.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { createTemporalClient } from '../../lib/temporal';
import { ADMIN_TOKEN } from '../support/admin';
import { makeOwner } from '../support/agent-stack';
import { freshDatabase, type TestDatabase } from '../support/db';
import { sweepSandboxDisks } from '../../activities/docker/sandbox-removal';
import { docker, removeContainers, testRunId } from '../support/docker';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream';
import { endHostWorkflows } from '../support/host-workflows';
import { uniqueTaskQueue } from '../support/temporal';
import { waitFor } from '../support/wait';

const ROOT = join(__dirname, '../..');
const CLUSTER = join(ROOT, 'ops/cluster/main.ts');
/** The per-user limit of one gateway (`USER_CONCURRENCY_LIMIT`, 8, per process): the survivor takes the whole load. */
const CONCURRENCY = 8;
const BEFORE_KILL = 600;
const AFTER_KILL = 400;
const STALE_SECONDS = 10;

/** `npm run cluster -- <args>` with the test's environment; resolves with its output. */
function clusterCommand(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLUSTER, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', (c: string) => { output += c; });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

function memberPid(dir: string, name: string): number {
  return Number(readFileSync(join(dir, `${name}.pid`), 'utf8').trim());
}

describe('e2e: the cluster shape (npm run cluster) under kill -9', function () {
  this.timeout(900_000);
  let t: TestDatabase;
  let upstream: FakeUpstream;
  let up: ChildProcess | undefined;
  let output = '';
  let env: NodeJS.ProcessEnv;
  let lb = '';
  let key = '';
  const dir = mkdtempSync(join(tmpdir(), 'cluster-e2e-'));
  const hostBase = `cl-${testRunId}`.toLowerCase().replace(/[^a-z0-9._-]/g, '-');
  const hostIds = [`${hostBase}-1`, `${hostBase}-2`];
  const controlQueue = uniqueTaskQueue('cluster');
  const schedules = ['sweep', 'idle', 'stats'].map((s) => `test-${s}-${controlQueue}`);
  const dispatcher = new Agent({ connections: CONCURRENCY });

  before(async () => {
    t = await freshDatabase();
    upstream = await startFakeUpstream();
    const models = join(dir, 'models.yaml');
    writeFileSync(models, `models:\n  - { id: m, name: M, provider: generic_compat, base_url: "${upstream.url}", api_key: k, supports_tools: true }\n`);
    const [balancer, api, g1, g2] = [await freeLoopbackPort(), await freeLoopbackPort(), await freeLoopbackPort(), await freeLoopbackPort()];
    lb = `http://127.0.0.1:${balancer}`;
    const secret = () => randomBytes(36).toString('base64url');
    env = {
      ...process.env, CLUSTER_DIR: dir, DATABASE_URL: t.url, GATEWAY_PORT: String(balancer), API_PORT: String(api), CLUSTER_GATEWAY_PORTS: `${g1},${g2}`,
      AGENT_HOST_ID: hostBase, TEMPORAL_CONTROL_TASK_QUEUE: controlQueue, MODELS_CONFIG_PATH: models, LOG_LEVEL: 'info',
      AGENT_DELETION_SWEEP_SCHEDULE_ID: schedules[0], AGENT_IDLE_STOP_SCHEDULE_ID: schedules[1], PUBLIC_STATS_SCHEDULE_ID: schedules[2],
      OBJECT_STORE_FS_ROOT: join(dir, 'object-store'), ADMIN_TOKEN, USER_AUTH_ENABLED: 'true', SIGNUP_ENABLED: 'true', SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false',
      AGENT_TITLE_GENERATION_ENABLED: 'false', AGENT_HOST_HEARTBEAT_SECONDS: '1', AGENT_HOST_STALE_SECONDS: String(STALE_SECONDS), SHUTDOWN_GRACE_SECONDS: '5',
      // At the kill, the rows since the last full batch are only in the dead gateway's journal.
      REQUEST_LOG_BATCH_SIZE: '1000', REQUEST_LOG_FLUSH_INTERVAL_MS: '60000',
      AUTH_JWT_SECRET: secret(), GATEWAY_GRANT_DISPATCH_TOKEN: secret(), AGENT_SETTINGS_ENCRYPTION_KEY: secret(), AGENT_CONTROL_TOKEN_SECRET: secret(),
    };
    up = spawn(process.execPath, ['--import', 'tsx', CLUSTER, 'up', '--no-bootstrap'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [up.stdout!, up.stderr!]) stream.setEncoding('utf8').on('data', (c: string) => { output += c; });
    await waitFor(() => output.includes('[cluster] cluster is up') || up!.exitCode !== null, 'npm run cluster is up', 600_000);
    assert.equal(up.exitCode, null, `npm run cluster exited:\n${output.slice(-4000)}`);
    key = await makeOwner(lb, t, 'cluster-owner@example.com');
  });

  after(async () => {
    if (up && up.exitCode === null) await clusterCommand(env, ['stop']);
    up?.kill('SIGKILL');
    await dispatcher.close();
    // The cluster runs on the shared Temporal server (TEMPORAL_ADDRESS, as npm run cluster does).
    const temporal = createTemporalClient({ TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233', TEMPORAL_NAMESPACE: 'default' });
    await endHostWorkflows(temporal.client, hostIds);
    for (const id of schedules) await temporal.client.schedule.getHandle(id).delete().catch(() => undefined);
    await temporal.connection.close();
    for (const [i, hostId] of hostIds.entries()) {
      await removeContainers({ 'agent.host': hostId });
      // The sandboxes' loop-mounted disks, released once their containers are gone.
      await sweepSandboxDisks(docker(), join(dir, `host-${i + 1}`, 'sandbox-disks'));
      rmSync(join(ROOT, '.data/host', `${hostId}.credential`), { force: true });
    }
    await upstream?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const owner = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${lb}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers } });

  async function createChat(prompt: string): Promise<string> {
    const res = await owner('/v1/agent/jobs', { method: 'POST', body: JSON.stringify({ prompt, model: 'm', repo: null }) });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { job_id: string }).job_id;
  }

  async function turnsDone(jobIds: readonly string[]): Promise<void> {
    await waitFor(async () => {
      const rows = await t.db('agent_turns').whereIn('job_id', jobIds).select<Array<{ state: string }>>('state');
      return rows.length === jobIds.length && rows.every((r) => r.state === 'completed');
    }, `${jobIds.length} chats' turns completed`, 240_000);
  }

  it('status lists every member healthy, HAProxy with both gateways in rotation', async () => {
    const status = await clusterCommand(env, ['status']);
    assert.equal(status.code, 0, status.output);
    for (const name of ['api', 'gateway-1', 'gateway-2', 'haproxy', 'control-1', 'control-2', 'host-1', 'host-2']) {
      assert.match(status.output, new RegExp(`^${name} +\\d+ .*healthy`, 'm'), status.output);
    }
    assert.match(status.output, /pool gateway-1 UP, gateway-2 UP/);
  });

  it('serves chat completions through both gateways and runs agent chats on both hosts', async () => {
    const served = new Map<string, number>();
    const chats = await Promise.all(Array.from({ length: 8 }, (_, i) => createChat(`chat ${i}`)));
    for (let i = 0; i < 20; i += 1) {
      const res = await owner('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `hi ${i}` }] }) });
      assert.equal(res.status, 200, await res.clone().text());
      const by = res.headers.get('x-served-by') ?? 'none';
      served.set(by, (served.get(by) ?? 0) + 1);
    }
    assert.deepEqual([...served.keys()].sort(), ['gateway-1', 'gateway-2']);
    await turnsDone(chats);
    const hosts = await t.db('agent_attempts').whereIn('job_id', chats).distinct<Array<{ host_id: string }>>('host_id');
    assert.deepEqual(hosts.map((h) => h.host_id).sort(), hostIds, 'both hosts ran turns');
  });

  it('kill -9 of host-1: once it is stale, new chats are placed on host-2 and run there', async () => {
    process.kill(memberPid(dir, 'host-1'), 'SIGKILL');
    await waitFor(async () => {
      const row = await t.db('agent_hosts').where({ host_id: hostIds[0] })
        .first<{ stale: boolean }>(t.db.raw('last_heartbeat_at < now() - make_interval(secs => ?) as stale', [STALE_SECONDS]));
      return row?.stale === true;
    }, 'host-1 is stale', 60_000);
    const chats = await Promise.all(Array.from({ length: 4 }, (_, i) => createChat(`after host-1 died ${i}`)));
    await turnsDone(chats);
    const hosts = await t.db('agent_attempts').whereIn('job_id', chats).distinct<Array<{ host_id: string }>>('host_id');
    assert.deepEqual(hosts.map((h) => h.host_id), [hostIds[1]]);
    await waitFor(() => output.includes('host-1 exited; the others keep running'), 'npm run cluster reports host-1 gone', 10_000);
  });

  it('kill -9 of gateway-1 under load: only its in-flight requests fail, and every counted 200 has exactly one row', async () => {
    const counted: string[] = [];
    const failures: string[] = [];
    let next = 0;
    let killedAt: number | undefined; // requests sent so far when the kill was sent
    const total = BEFORE_KILL + AFTER_KILL;
    const victim = memberPid(dir, 'gateway-1');
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) {
        const id = `load-${next++}`;
        const res = await fetch(`${lb}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': id },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${id}` }] }), dispatcher,
        } as unknown as RequestInit).catch((err: unknown) => {
          failures.push(`${id}: ${String((err as Error).cause ?? err)}`);
          return undefined;
        });
        const status = res?.status;
        const by = res?.headers.get('x-served-by');
        const text = (await res?.text().catch(() => '')) ?? '';
        if (status !== 200) {
          if (res) failures.push(`${id}: ${status} from ${by ?? 'haproxy'} (${killedAt === undefined ? 'before' : 'after'} the kill) ${text.slice(0, 160)}`);
          continue;
        }
        counted.push(id); // every 200 the client read, from either gateway, before or after the kill
        if (by === 'gateway-1' && next >= BEFORE_KILL && killedAt === undefined) {
          killedAt = next;
          process.kill(victim, 'SIGKILL');
        }
      }
    }));
    assert.ok(killedAt !== undefined, 'gateway-1 was killed under load');
    assert.ok(failures.length <= CONCURRENCY, `at most the ${CONCURRENCY} in-flight requests fail (${failures.length} failed):\n${failures.join('\n')}`);
    assert.ok(total - killedAt > 100, 'the load went on after the kill');
    const inDb = await t.db('api_logs').whereIn('request_id', counted).count<Array<{ n: string }>>('* as n');
    assert.ok(Number(inDb[0]!.n) < counted.length, 'rows of answered requests were only in the journal at the kill');

    const restarted = await clusterCommand(env, ['start', 'gateway-1']);
    assert.equal(restarted.code, 0, restarted.output);
    assert.match(restarted.output, /gateway-1 started/);
    const stopped = await clusterCommand(env, ['stop']);
    assert.equal(stopped.code, 0, stopped.output);
    await waitFor(() => up!.exitCode !== null, 'the foreground npm run cluster exits on stop', 30_000);
    assert.match(output, /gateway-1 exited; the others keep running/);

    const rows = await t.db('api_logs').whereIn('request_id', counted).select('request_id').count<Array<{ request_id: string; n: string }>>('* as n').groupBy('request_id');
    const perId = new Map(rows.map((r) => [r.request_id, Number(r.n)]));
    const missing = counted.filter((id) => !perId.has(id));
    assert.deepEqual(missing, [], `every counted 200 has its row (${missing.length} of ${counted.length} missing)`);
    assert.deepEqual(rows.filter((r) => Number(r.n) !== 1), [], 'no request has two rows');
  });
});
