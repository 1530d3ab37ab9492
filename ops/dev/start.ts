/**
 * `npm start` (after the bootstrap): checks that the gateway's and the API's ports are free,
 * applies migrations, enrolls this machine as an execution host, builds, then runs gateway
 * (`GATEWAY_PORT`, 8080), api (`API_PORT`, 8081), the control worker and the host runner in the
 * foreground with prefixed output. Ctrl-C stops these processes cleanly, each draining once: the
 * terminal's SIGINT and the SIGTERM sent here are one request to them (lib/shutdown.ts); SIGKILL
 * after the grace period. The backing services keep running (`npm run stack:stop`).
 * If any process exits on its own, the others are stopped and `npm start` exits non-zero.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
import { assertPortsFree } from './ports';
import { ensureDevVersitygw } from './versitygw';
import { DEV_DATABASE_URL } from './postgres';
import { DATA, ROOT, run } from './sh';

const GRACE_MS = 12_000;

interface ProcessSpec {
  name: string;
  script: string;
  env?: Record<string, string>;
}

function log(message: string): void {
  console.log(`[start] ${message}`);
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

function prefixLines(name: string, stream: NodeJS.ReadableStream, out: NodeJS.WriteStream): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) out.write(`[${name}] ${line}\n`);
  });
  stream.on('end', () => {
    if (pending) out.write(`[${name}] ${pending}\n`);
  });
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

  log('building (tsc)');
  const build = run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('build failed');

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
  const specs: ProcessSpec[] = [
    { name: 'gateway', script: 'dist/gateway/main.js' },
    { name: 'api', script: 'dist/api/main.js' },
    { name: 'control', script: 'dist/workers/control.js' },
    { name: 'host', script: 'dist/workers/host.js', env: { AGENT_HOST_ID: host.hostId, AGENT_HOST_CREDENTIAL: host.credential } },
  ];

  const children = new Map<string, ChildProcess>();
  let stopping = false;
  let exitCode = 0;

  const stopAll = (reason: string, code: number): void => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    log(`stopping (${reason})`);
    for (const child of children.values()) child.kill('SIGTERM');
    setTimeout(() => {
      for (const child of children.values()) child.kill('SIGKILL');
    }, GRACE_MS).unref();
  };

  for (const spec of specs) {
    const child = spawn(process.execPath, ['--enable-source-maps', join(ROOT, spec.script)], {
      cwd: ROOT,
      env: { ...process.env, ...baseEnv, ...spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.set(spec.name, child);
    prefixLines(spec.name, child.stdout, process.stdout);
    prefixLines(spec.name, child.stderr, process.stderr);
    child.on('exit', (code, signal) => {
      children.delete(spec.name);
      if (!stopping) stopAll(`${spec.name} exited (${signal ?? code})`, 1);
      if (children.size === 0) {
        log('all processes stopped');
        process.exit(exitCode);
      }
    });
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stopAll(signal, 0));

  log('stack is up:');
  log(`  gateway      http://127.0.0.1:${settings.GATEWAY_PORT}   (GET /health)`);
  log(`  api          http://127.0.0.1:${settings.API_PORT}   (GET /health)`);
  log('  Temporal UI  http://127.0.0.1:8233');
  if (devS3.S3_ENDPOINT) log(`  S3 (dev)     ${devS3.S3_ENDPOINT}   bucket ${devS3.S3_BUCKET} (versitygw; keys in .data/secrets/versitygw-s3.json)`);
  log(`  host runner  ${host.hostId} on task queue host:${host.hostId}`);
  if (demo) log(demo.banner);
  log('Ctrl-C stops these processes; `npm run stack:stop` also stops PostgreSQL, Temporal and dockerd.');
}

main().catch((err: unknown) => {
  console.error(`[start] FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
