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
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { enrollHost } from '../../agent/hosts/host-registry';
import { secretMatches } from '../../lib/identity/constant-time';
import { loadSettings } from '../../lib/settings';
import { startDemoModelIfWanted } from './demo-model';
import { runBuildSteps } from './build-steps';
import { startLine } from './log-format';
import { ProcessGroup, type ProcessSpec } from './process-group';
import { WORKFLOW_BUNDLE } from './workflow-bundle-step';
import { assertPortsFree } from './ports';
import { ensureDevVersitygw } from './versitygw';
import { DEV_DATABASE_URL } from './postgres';
import { DATA, LOGS, ROOT } from './sh';

const GRACE_MS = 12_000;

/** Readable, coloured lines on a terminal (`NO_COLOR` turns colour off); JSON lines elsewhere. */
const READABLE = process.stdout.isTTY === true;
const COLOUR = READABLE && !process.env.NO_COLOR;

function log(message: string): void {
  console.log(startLine(message, { readable: READABLE, colour: COLOUR }));
}

/** This machine's host id and its enrollment credential, enrolled once and kept under `.data/`. */
async function ensureHostEnrollment(databaseUrl: string): Promise<{ hostId: string; credential: string }> {
  const hostId = (process.env.AGENT_HOST_ID ?? hostname()).toLowerCase().replace(/[^a-z0-9._-]/g, '-').slice(0, 63);
  const file = join(DATA, 'host', `${hostId}.credential`);
  const db = createDb({ url: databaseUrl, applicationName: 'start' });
  try {
    // Reuse the kept credential only while it still matches the enrollment (a re-enrollment rotates it).
    const row = await db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').first<{ credential_hash: string } | undefined>('credential_hash');
    const kept = existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
    if (row && kept && secretMatches(kept, row.credential_hash)) return { hostId, credential: kept };
    const enrolled = await enrollHost(db, hostId);
    mkdirSync(join(DATA, 'host'), { recursive: true, mode: 0o700 });
    writeFileSync(file, enrolled.credential, { mode: 0o600 });
    log(`enrolled this machine as execution host ${hostId}`);
    return enrolled;
  } finally {
    await db.destroy();
  }
}

/**
 * A dev-stack secret: the environment's value when set, else a random one kept in
 * `.data/secrets/<file>` (mode 0600) so it survives restarts of `npm start` (logins keep working,
 * the control worker and the gateway keep agreeing on the grant dispatch token, saved credential
 * settings stay readable).
 */
function devSecret(envName: 'AUTH_JWT_SECRET' | 'GATEWAY_GRANT_DISPATCH_TOKEN' | 'AGENT_SETTINGS_ENCRYPTION_KEY' | 'AGENT_CONTROL_TOKEN_SECRET', file: string): string {
  const fromEnv = process.env[envName];
  if (fromEnv) return fromEnv;
  const dir = join(DATA, 'secrets');
  const path = join(dir, file);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path, randomBytes(48).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(path, 'utf8').trim();
}

/** The `/health` URL of a server listening on `host:port` (a wildcard address is reached on loopback). */
function healthUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}/health`;
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
  const host = await ensureHostEnrollment(databaseUrl);
  // No registry and no credential configured: a scripted demo model to talk to (docs/demo-model.md).
  const demo = await startDemoModelIfWanted(process.env, settings);

  for (const step of await runBuildSteps(ROOT)) {
    log(`build ${step.name}: ${step.outcome === 'built' ? `built in ${(step.ms / 1000).toFixed(1)} s` : `unchanged (checked in ${step.ms} ms)`}`);
  }

  const baseEnv: Record<string, string> = {
    ...devS3,
    ...demo?.env,
    DATABASE_URL: databaseUrl,
    AUTH_JWT_SECRET: devSecret('AUTH_JWT_SECRET', 'auth-jwt-secret'),
    GATEWAY_GRANT_DISPATCH_TOKEN: devSecret('GATEWAY_GRANT_DISPATCH_TOKEN', 'grant-dispatch-token'),
    AGENT_SETTINGS_ENCRYPTION_KEY: devSecret('AGENT_SETTINGS_ENCRYPTION_KEY', 'settings-encryption-key'),
    AGENT_CONTROL_TOKEN_SECRET: devSecret('AGENT_CONTROL_TOKEN_SECRET', 'control-token-secret'),
    // A moved port moves the URLs the processes use to reach each other (unless set explicitly).
    AGENT_GATEWAY_URL: process.env.AGENT_GATEWAY_URL ?? `http://127.0.0.1:${settings.GATEWAY_PORT}`,
    AGENT_API_URL: process.env.AGENT_API_URL ?? `http://127.0.0.1:${settings.API_PORT}`,
  };
  // Started in phases: the workers call the API and the gateway, so they start once both answer /health.
  const servers: ProcessSpec[] = [
    { name: 'gateway', script: 'dist/gateway/main.js', ready: { health: healthUrl(settings.GATEWAY_HOST, settings.GATEWAY_PORT) } },
    { name: 'api', script: 'dist/api/main.js', ready: { health: healthUrl(settings.API_HOST, settings.API_PORT) } },
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
  group.say(`  api          http://127.0.0.1:${settings.API_PORT}   (GET /health)`);
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
