/**
 * `npm run cluster`: the cluster shape on one machine (docs/dev-stack.md "npm run cluster"), over
 * the PostgreSQL and Temporal server the bootstrap started: 2 gateways behind HAProxy (on
 * `GATEWAY_PORT`, 8080), the API (`API_PORT`), 2 control workers, and 2 host runners enrolled as
 * two execution hosts (`<AGENT_HOST_ID or machine name>-1` and `-2`, each its own slots, task
 * queue, sandbox-disk and relay directories). Every process has its port, pid and log file under
 * `.data/cluster/` (`CLUSTER_DIR`). A member that dies is reported and the others keep running.
 *
 *   npm run cluster                   the bootstrap (ops/dev/bootstrap.sh, as npm start runs it), then
 *                                     start, and stay in the foreground; Ctrl-C stops every member
 *                                     (`-- up --no-bootstrap`: without the bootstrap, as the e2e test runs it)
 *   npm run cluster -- stop           stop every member (and the foreground command), from any terminal
 *   npm run cluster -- status         each member's pid, port and health (exit 1 when one is down)
 *   npm run cluster -- start <name>   start one member again (e.g. gateway-1 after a kill -9)
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../lib/db';
import { loadSettings, type Settings } from '../../lib/settings';
import { migrateLatest } from '../../migrations/runner';
import { runBuildSteps } from '../dev/build-steps';
import { startDemoModelIfWanted, type StartedDemo } from '../dev/demo-model';
import { assertPortsFree } from '../dev/ports';
import { DEV_DATABASE_URL } from '../dev/postgres';
import { ROOT } from '../dev/sh';
import { devSecrets, ensureHostEnrollment, normalizeHostId } from '../dev/stack-setup';
import { WORKFLOW_BUNDLE } from '../dev/workflow-bundle-step';
import { ensureHaproxy, haproxyConfig } from './haproxy';
import { runningPid, startMember, stopMembers } from './members';
import { clusterPlan, haproxyConfigFile, haproxySocket, type MemberSpec } from './plan';
import { clusterStatus, formatStatus } from './status';
import { allMembers, clusterDir, processAlive, readState, writeState, type ClusterState } from './state';

const GRACE_MS = 15_000;
const GATEWAYS = 2;
const CONTROL_WORKERS = 2;
const HOSTS = 2;

function say(message: string): void {
  console.log(`[cluster] ${message}`);
}

/** The gateways' ports: `CLUSTER_GATEWAY_PORTS` (comma-separated), else `GATEWAY_PORT` + 100, + 101. */
function gatewayPorts(settings: Settings): number[] {
  const listed = process.env.CLUSTER_GATEWAY_PORTS?.split(',').map((p) => Number(p.trim())).filter((p) => p > 0);
  if (listed && listed.length !== GATEWAYS) throw new Error(`CLUSTER_GATEWAY_PORTS must list ${GATEWAYS} ports, got "${process.env.CLUSTER_GATEWAY_PORTS}"`);
  return listed ?? Array.from({ length: GATEWAYS }, (_, i) => settings.GATEWAY_PORT + 100 + i);
}

async function prepare(settings: Settings, databaseUrl: string): Promise<Array<{ hostId: string; credential: string }>> {
  const db = createDb({ url: databaseUrl, applicationName: 'cluster' });
  try {
    const applied = await migrateLatest(db);
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'database schema up to date');
  } finally {
    await db.destroy();
  }
  const base = normalizeHostId(process.env.AGENT_HOST_ID ?? hostname()).slice(0, 60);
  const hosts = [];
  for (let i = 1; i <= HOSTS; i += 1) hosts.push(await ensureHostEnrollment(databaseUrl, `${base}-${i}`, say));
  for (const step of await runBuildSteps(ROOT)) {
    say(`build ${step.name}: ${step.outcome === 'built' ? `built in ${(step.ms / 1000).toFixed(1)} s` : 'unchanged'}`);
  }
  return hosts;
}

async function up(dir: string): Promise<void> {
  const previous = readState(dir);
  if (previous && processAlive(previous.supervisorPid)) throw new Error(`a cluster is already running from ${dir} (pid ${previous.supervisorPid}): npm run cluster -- stop`);
  ensureHaproxy();
  const settings = loadSettings(process.env);
  const ports = { balancer: settings.GATEWAY_PORT, api: settings.API_PORT, gateways: gatewayPorts(settings) };
  await assertPortsFree([
    { name: 'load balancer', host: '127.0.0.1', port: ports.balancer, variable: 'GATEWAY_PORT' },
    { name: 'api', host: '127.0.0.1', port: ports.api, variable: 'API_PORT' },
    ...ports.gateways.map((port, i) => ({ name: `gateway-${i + 1}`, host: '127.0.0.1', port, variable: 'CLUSTER_GATEWAY_PORTS' })),
  ]);
  const databaseUrl = process.env.DATABASE_URL ?? DEV_DATABASE_URL;
  const hosts = await prepare(settings, databaseUrl);
  const demo = await startDemoModelIfWanted(process.env, settings);
  const phases = clusterPlan({
    root: ROOT, dir, balancerPort: ports.balancer, gatewayPorts: ports.gateways, apiPort: ports.api, hosts,
    controlWorkers: CONTROL_WORKERS, trustedProxies: process.env.TRUSTED_PROXIES, workflowBundle: join(ROOT, WORKFLOW_BUNDLE),
  });
  const state: ClusterState = {
    supervisorPid: process.pid, databaseUrl, balancerPort: ports.balancer, phases,
    env: { ...demo?.env, DATABASE_URL: databaseUrl, ...devSecrets() },
  };
  writeState(dir, state);
  writeFileSync(haproxyConfigFile(dir), haproxyConfig({
    listenPort: ports.balancer, statsSocket: haproxySocket(dir),
    gateways: phases.flat().filter((m) => m.kind === 'gateway').map((m) => ({ name: m.name, port: m.port! })),
  }));
  const stopping = supervise(dir, state, demo);
  try {
    for (const phase of phases) await Promise.all(phase.map((spec) => startMember(dir, spec, { ...process.env, ...state.env })));
  } catch (err) {
    if (stopping.requested) return;
    say(`FAILED: ${(err as Error).message}`);
    await stopping.stop(1);
    return;
  }
  // A host runner says it polls just before its first heartbeat lands: give the beats a moment.
  let rows = await clusterStatus(dir, state, settings.AGENT_HOST_STALE_SECONDS);
  for (let i = 0; i < 20 && rows.some((r) => !r.healthy); i += 1) {
    await new Promise((r) => setTimeout(r, 500));
    rows = await clusterStatus(dir, state, settings.AGENT_HOST_STALE_SECONDS);
  }
  say(`cluster is up in ${process.uptime().toFixed(1)} s (members' logs and pids in ${dir}):`);
  console.log(formatStatus(rows));
  say(`gateway (HAProxy) http://127.0.0.1:${ports.balancer}   api http://127.0.0.1:${ports.api}   Temporal UI http://127.0.0.1:8233`);
  if (demo) say(demo.banner);
  say('Ctrl-C (or `npm run cluster -- stop`) stops every member; `npm run cluster -- status` shows their health.');
  stopping.watch();
}

/** Ctrl-C / SIGTERM stop every member; while running, a member that dies (or comes back) is reported. */
function supervise(dir: string, state: ClusterState, demo: StartedDemo | undefined): { requested: boolean; stop(code: number): Promise<void>; watch(): void } {
  const members = allMembers(state);
  let timer: NodeJS.Timeout | undefined;
  const control = {
    requested: false,
    async stop(code: number): Promise<void> {
      if (control.requested) return;
      control.requested = true;
      clearInterval(timer);
      const started = Date.now();
      const killed = await stopMembers(dir, [...members].reverse(), GRACE_MS);
      await demo?.close();
      say(`stopped ${members.map((m) => m.name).join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s${killed.length ? `; killed after ${GRACE_MS / 1000} s: ${killed.join(', ')}` : ''}`);
      process.exit(killed.length ? 1 : code);
    },
    watch(): void {
      const up = new Map(members.map((m) => [m.name, true]));
      timer = setInterval(() => {
        for (const spec of members) {
          const running = runningPid(dir, spec) !== undefined;
          if (running === up.get(spec.name)) continue;
          up.set(spec.name, running);
          say(running ? `${spec.name} is running again` : `${spec.name} exited; the others keep running (log: ${join(dir, `${spec.name}.log`)}; \`npm run cluster -- start ${spec.name}\` starts it again)`);
        }
      }, 1000);
    },
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void control.stop(0));
  return control;
}

async function stop(dir: string, state: ClusterState): Promise<void> {
  if (processAlive(state.supervisorPid) && state.supervisorPid !== process.pid) {
    process.kill(state.supervisorPid, 'SIGTERM');
    const deadline = Date.now() + GRACE_MS + 5000;
    while (processAlive(state.supervisorPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }
  // Members whose supervisor was gone (killed, or its terminal closed).
  const killed = await stopMembers(dir, [...allMembers(state)].reverse(), GRACE_MS);
  say(killed.length ? `stopped; killed after ${GRACE_MS / 1000} s: ${killed.join(', ')}` : 'stopped');
}

async function startOne(dir: string, state: ClusterState, name: string | undefined): Promise<void> {
  const spec: MemberSpec | undefined = allMembers(state).find((m) => m.name === name);
  if (!spec) throw new Error(`usage: npm run cluster -- start <name>, one of ${allMembers(state).map((m) => m.name).join(', ')}`);
  const pid = runningPid(dir, spec);
  if (pid !== undefined) return say(`${spec.name} is already running (pid ${pid})`);
  say(`${spec.name} started (pid ${await startMember(dir, spec, { ...process.env, ...state.env })})`);
}

async function main(): Promise<void> {
  const [command = 'up', name] = process.argv.slice(2);
  const dir = clusterDir();
  if (command === 'up') {
    if (name !== '--no-bootstrap' && spawnSync('bash', [join(ROOT, 'ops/dev/bootstrap.sh')], { stdio: 'inherit' }).status !== 0) throw new Error('the bootstrap failed (above)');
    return up(dir);
  }
  if (!['stop', 'status', 'start'].includes(command)) throw new Error(`unknown command "${command}": npm run cluster [-- stop | status | start <name>]`);
  const state = readState(dir);
  if (!state) throw new Error(`no cluster was started from ${dir}`);
  if (command === 'stop') return stop(dir, state);
  if (command === 'start') return startOne(dir, state, name);
  const rows = await clusterStatus(dir, state, loadSettings(process.env).AGENT_HOST_STALE_SECONDS);
  console.log(formatStatus(rows));
  if (rows.some((r) => !r.healthy)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(`[cluster] FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
