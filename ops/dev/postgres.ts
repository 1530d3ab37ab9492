/**
 * PostgreSQL for the dev stack: use whatever already answers on 127.0.0.1:5432 (creating the
 * `gateway` role and database there if we can), else run a project cluster in `.data/postgres`.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BootstrapError, DATA, LOGS, isRoot, run, say, tcpOpen, waitFor } from './sh';

export const PG_HOST = '127.0.0.1';
export const PG_PORT = 5432;
export const DEV_DATABASE_URL = `postgres://gateway:gateway@${PG_HOST}:${PG_PORT}/gateway`;

const PGDATA = join(DATA, 'postgres');
const SOCKET_DIR = join(DATA, 'postgres-run');
const LOG_FILE = join(LOGS, 'postgres.log');
const OWNER = isRoot ? 'postgres' : undefined;

/** The newest installed PostgreSQL binary `name` (e.g. `initdb`, `pg_ctl`), else `name` on PATH. */
export function pgBin(name: string): string {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const candidate = `/usr/lib/postgresql/${v}/bin/${name}`;
    if (existsSync(candidate)) return candidate;
  }
  return name;
}

function canLogin(): boolean {
  return run('psql', [DEV_DATABASE_URL, '-Atqc', 'select 1'], { env: { ...process.env, PGCONNECT_TIMEOUT: '3' } }).stdout.trim() === '1';
}

const SETUP_SQL = `
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gateway') THEN CREATE ROLE gateway LOGIN CREATEDB PASSWORD 'gateway';
  ELSE ALTER ROLE gateway LOGIN CREATEDB PASSWORD 'gateway'; END IF;
END $$;`;

/** Creates role and database as the cluster superuser over a Unix socket. */
function createRoleAndDatabase(socketDir: string): boolean {
  const asSuper = (sql: string) => run('psql', ['-h', socketDir, '-p', String(PG_PORT), '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-Atqc', sql], { asUser: OWNER });
  if (asSuper(SETUP_SQL).status !== 0) return false;
  if (asSuper(`SELECT 1 FROM pg_database WHERE datname = 'gateway'`).stdout.trim() !== '1') {
    if (asSuper('CREATE DATABASE gateway OWNER gateway').status !== 0) return false;
  }
  return true;
}

/**
 * The cluster runs as the `postgres` user, which must be able to reach `.data/` inside the clone.
 * A clone under a private directory (e.g. `mktemp -d`, mode 700) denies that: grant traverse-only
 * permission (o+x, no read) on each ancestor that lacks it, and say so.
 */
function ensurePostgresCanReach(dir: string): void {
  if (!OWNER) return;
  const ancestors: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    ancestors.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of ancestors) {
    if (!existsSync(d) || run('test', ['-x', d], { asUser: OWNER }).status === 0) continue;
    chmodSync(d, statSync(d).mode | 0o001);
    say(`granted the postgres user traverse-only access (o+x) to ${d}`);
  }
}

function initCluster(): void {
  say('initializing a PostgreSQL cluster in .data/postgres');
  ensurePostgresCanReach(DATA);
  for (const dir of [PGDATA, SOCKET_DIR]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (OWNER) chownSync(dir, uid(OWNER), gid(OWNER));
  }
  writeFileSync(LOG_FILE, '', { flag: 'a' });
  if (OWNER) chownSync(LOG_FILE, uid(OWNER), gid(OWNER));
  const init = run(pgBin('initdb'), ['-D', PGDATA, '-U', 'postgres', '--encoding=UTF8', '--locale=C', '--auth-local=peer', '--auth-host=scram-sha-256'], { asUser: OWNER });
  if (init.status !== 0) throw new BootstrapError('postgres', `initdb failed: ${init.stderr.trim()}`);
}

function startCluster(): void {
  say('starting PostgreSQL on 127.0.0.1:5432');
  ensurePostgresCanReach(DATA);
  const options = `-c listen_addresses=${PG_HOST} -p ${PG_PORT} -k ${SOCKET_DIR} -c max_connections=200`;
  const started = run(pgBin('pg_ctl'), ['-D', PGDATA, '-l', LOG_FILE, '-o', options, '-w', '-t', '60', 'start'], { asUser: OWNER });
  if (started.status !== 0) throw new BootstrapError('postgres', `pg_ctl start failed: ${started.stderr.trim() || started.stdout.trim()}`, LOG_FILE);
}

export async function ensurePostgres(): Promise<void> {
  if (await tcpOpen(PG_HOST, PG_PORT)) {
    if (canLogin()) return;
    // Something else serves 5432: our own cluster (socket in .data) or a system one.
    for (const socketDir of [SOCKET_DIR, '/var/run/postgresql']) {
      if (existsSync(join(socketDir, `.s.PGSQL.${PG_PORT}`)) && createRoleAndDatabase(socketDir) && canLogin()) return;
    }
    throw new BootstrapError('postgres', `127.0.0.1:${PG_PORT} answers but role gateway cannot log in and could not be created; create it (CREATE ROLE gateway LOGIN CREATEDB PASSWORD 'gateway'; CREATE DATABASE gateway OWNER gateway) or stop that server`);
  }
  if (!existsSync(join(PGDATA, 'PG_VERSION'))) initCluster();
  startCluster();
  await waitFor('postgres', () => tcpOpen(PG_HOST, PG_PORT), { timeoutMs: 60_000, logFile: LOG_FILE, what: 'port 5432' });
  if (!createRoleAndDatabase(SOCKET_DIR) || !canLogin()) {
    throw new BootstrapError('postgres', 'could not create role and database gateway', LOG_FILE);
  }
}

/** Stops the project cluster if it is the one running. */
export function stopPostgres(): void {
  if (existsSync(join(PGDATA, 'postmaster.pid'))) run(pgBin('pg_ctl'), ['-D', PGDATA, '-m', 'fast', 'stop'], { asUser: OWNER });
}

function uid(user: string): number {
  return Number(run('id', ['-u', user]).stdout.trim());
}
function gid(user: string): number {
  return Number(run('id', ['-g', user]).stdout.trim());
}
