/**
 * `npm start` (after the bootstrap): checks that the gateway's and the API's ports are free,
 * applies migrations, enrolls this machine as an execution host, builds what changed
 * (ops/dev/build-steps.ts), then runs gateway (`GATEWAY_PORT`, 8080) and api (`API_PORT`, 8081),
 * and once both answer `/health`, the control worker and the host runner, in the foreground
 * (ops/dev/process-group.ts: readable lines on a terminal, JSON otherwise; everything also in
 * `.data/logs/start-<date>.log`). Ctrl-C stops these processes cleanly, each draining once: the
 * terminal's SIGINT and the SIGTERM sent here are one request to them (lib/shutdown.ts); SIGKILL
 * after the grace period; one summary line. The backing services keep running
 * (`npm run stack:stop`). If any process exits on its own, the others are stopped and
 * `npm start` exits non-zero.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { loadSettings } from '../../lib/settings';
import { startDemoModelIfWanted } from './demo-model';
import { runBuildSteps } from './build-steps';
import { startLine } from './log-format';
import { ProcessGroup, type ProcessSpec } from './process-group';
import { WORKFLOW_BUNDLE } from './workflow-bundle-step';
import { assertPortsFree } from './ports';
import { ensureDevVersitygw } from './versitygw';
import { DEV_DATABASE_URL } from './postgres';
import { LOGS, ROOT } from './sh';
import { devSecrets, ensureHostEnrollment, healthUrl, normalizeHostId } from './stack-setup';

const GRACE_MS = 12_000;

/** Readable, coloured lines on a terminal (`NO_COLOR` turns colour off); JSON lines elsewhere. */
const READABLE = process.stdout.isTTY === true;
const COLOUR = READABLE && !process.env.NO_COLOR;

function log(message: string): void {
  console.log(startLine(message, { readable: READABLE, colour: COLOUR }));
}

async function main(): Promise<void> {
  // OBJECT_STORE_BACKEND=s3 without an endpoint: the dev versitygw, and settings pointing at it.
  const devS3 = process.env.OBJECT_STORE_BACKEND === 's3' && !process.env.S3_ENDPOINT ? await ensureDevVersitygw() : {};
  const settings = loadSettings({ ...process.env, ...devS3 });
  await assertPortsFree([
    { name: 'gateway', host: settings.GATEWAY_HOST, port: settings.GATEWAY_PORT, variable: 'GATEWAY_PORT' },
    { name: 'api', host: settings.API_HOST, port: settings.API_PORT, variable: 'API_PORT' },
  ]);
  const databaseUrl = process.env.DATABASE_URL ?? DEV_DATABASE_URL;
  const db = createDb({ url: databaseUrl, applicationName: 'start' });
  try {
    const applied = await migrateLatest(db);
    log(applied.length ? `migrations applied: ${applied.join(', ')}` : 'database schema up to date');
  } finally {
    await db.destroy();
  }
  const host = await ensureHostEnrollment(databaseUrl, normalizeHostId(process.env.AGENT_HOST_ID ?? hostname()), log);
  // No registry and no credential configured: a scripted demo model to talk to (docs/demo-model.md).
  const demo = await startDemoModelIfWanted(process.env, settings);

  for (const step of await runBuildSteps(ROOT)) {
    log(`build ${step.name}: ${step.outcome === 'built' ? `built in ${(step.ms / 1000).toFixed(1)} s` : `unchanged (checked in ${step.ms} ms)`}`);
  }

  const baseEnv: Record<string, string> = {
    ...devS3,
    ...demo?.env,
    DATABASE_URL: databaseUrl,
    ...devSecrets(),
    // A moved port moves the URLs the processes use to reach each other (unless set explicitly).
    AGENT_GATEWAY_URL: process.env.AGENT_GATEWAY_URL ?? `http://127.0.0.1:${settings.GATEWAY_PORT}`,
    AGENT_API_URL: process.env.AGENT_API_URL ?? `http://127.0.0.1:${settings.API_PORT}`,
  };
  // Started in phases: the workers call the API and the gateway, so they start once both answer /health.
  const servers: ProcessSpec[] = [
    // One origin (docs/one-origin.md): the gateway forwards the agent API's paths to the API, which
    // trusts it (loopback) to say who the client is.
    {
      name: 'gateway', script: 'dist/gateway/main.js', env: { GATEWAY_AGENT_API_URL: process.env.GATEWAY_AGENT_API_URL ?? `http://127.0.0.1:${settings.API_PORT}` },
      ready: { health: healthUrl(settings.GATEWAY_HOST, settings.GATEWAY_PORT) },
    },
    {
      name: 'api', script: 'dist/api/main.js', env: { TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: [process.env.TRUSTED_PROXIES, '127.0.0.1'].filter(Boolean).join(',') },
      ready: { health: healthUrl(settings.API_HOST, settings.API_PORT) },
    },
  ];
  const workers: ProcessSpec[] = [
    {
      name: 'control', script: 'dist/workers/control.js', env: { TEMPORAL_WORKFLOW_BUNDLE_PATH: join(ROOT, WORKFLOW_BUNDLE) },
      ready: { logMessage: 'control worker polling' },
    },
    {
      name: 'host', script: 'dist/workers/host.js', env: { AGENT_HOST_ID: host.hostId, AGENT_HOST_CREDENTIAL: host.credential },
      ready: { logMessage: 'host runner polling' },
    },
  ];

  const group = new ProcessGroup({
    root: ROOT, env: { ...process.env, ...baseEnv }, logDir: LOGS, readable: READABLE, colour: COLOUR, graceMs: GRACE_MS,
    onExit: (code) => process.exit(code),
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => group.stop(signal, 0));
  try {
    await group.startPhase(servers);
    await group.startPhase(workers);
  } catch (err) {
    if (group.isStopping) return; // Ctrl-C while starting, or a process exited (already said).
    group.say(`FAILED: ${(err as Error).message}`, 'error');
    group.stop('a process did not start', 1);
    return;
  }

  // Since this process started (the bootstrap before it is not counted).
  group.say(`stack is up in ${process.uptime().toFixed(1)} s:`);
  group.say(`  gateway      http://127.0.0.1:${settings.GATEWAY_PORT}   (GET /health)`);
  group.say(`  api          http://127.0.0.1:${settings.API_PORT}   (GET /health; /v1/agent/* and /admin/agent/* also on the gateway's port)`);
  group.say('  Temporal UI  http://127.0.0.1:8233');
  if (devS3.S3_ENDPOINT) group.say(`  S3 (dev)     ${devS3.S3_ENDPOINT}   bucket ${devS3.S3_BUCKET} (versitygw; keys in .data/secrets/versitygw-s3.json)`);
  group.say(`  host runner  ${host.hostId} on task queue host:${host.hostId}`);
  group.say(`  console      http://127.0.0.1:${settings.GATEWAY_PORT}/console/`);
  group.say(`  full log     ${group.logFile}`);
  if (demo) group.say(demo.banner);
  group.say('Ctrl-C stops these processes; `npm run stack:stop` also stops PostgreSQL, Temporal and dockerd.');
}

main().catch((err: unknown) => {
  console.error(startLine(`FAILED: ${err instanceof Error ? err.message : String(err)}`, { readable: READABLE, colour: COLOUR, level: 'error' }));
  process.exit(1);
});
