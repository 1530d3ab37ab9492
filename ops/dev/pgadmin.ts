/**
 * pgAdmin 4 (PostgreSQL License), the real database admin tool behind the control-plane API's
 * database-tool proxy (docs/agent-admin.md "Database tool"), for the tests and the dev stack.
 *
 * - `ensurePgadmin`: a Python venv at `.tools/pgadmin/<version>` with `pgadmin4==<version>` from
 *   PyPI (pip is used only to install it). Installed once per version, when missing; concurrent
 *   installs (clones sharing `.tools`) are serialized by a lock directory. About 30 s on an idle
 *   2-core machine, a few minutes on a busy one.
 * - `startPgadmin`: pgAdmin in server mode on 127.0.0.1:<port> with its own data directory (a
 *   config file named by `CONFIG_DISTRO_FILE_PATH`: nothing under /var or ~ is used). On the first
 *   start of a data directory pgAdmin creates its administrator from `PGADMIN_SETUP_EMAIL` and
 *   `PGADMIN_SETUP_PASSWORD` (the saved initial password: ops/dev/database-tool-password.ts),
 *   passed in the environment, never in argv. It serves under any prefix a proxy names in
 *   `X-Script-Name` (the proxy sends `/api/admin/agent/pgadmin`).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { withBuildLock } from './build-lock';
import { stopProcess } from './s3-server';
import { BootstrapError, TOOLS, run, runLogged, say } from './sh';

/** The newest pgadmin4 release on PyPI (2026-11). */
export const PGADMIN_VERSION = '9.18';

/**
 * The venv of a version; `PGADMIN_VENV` names another one (a checkout whose `.tools` it may not
 * write, e.g. a worktree sharing another checkout's).
 */
export function pgadminHome(version: string = PGADMIN_VERSION): string {
  return process.env.PGADMIN_VENV || join(TOOLS, 'pgadmin', version);
}

function python(home: string): string {
  return join(home, 'bin', 'python');
}

/** pgAdmin's entry script inside the venv. */
function entryScript(home: string): string | undefined {
  // pgadmin4 is not an importable package (no __init__): find it in the venv's site-packages.
  const found = run(python(home), ['-c', "import os, sysconfig; print(os.path.join(sysconfig.get_paths()['purelib'], 'pgadmin4'))"]);
  const dir = found.status === 0 ? found.stdout.trim() : '';
  return dir && existsSync(join(dir, 'pgAdmin4.py')) ? join(dir, 'pgAdmin4.py') : undefined;
}

function installed(home: string): boolean {
  return existsSync(python(home)) && existsSync(join(home, '.installed')) && entryScript(home) !== undefined;
}

/** Installs pgAdmin 4 into its venv unless this version is already there. Idempotent. */
export async function ensurePgadmin(version: string = PGADMIN_VERSION): Promise<string> {
  const home = pgadminHome(version);
  if (installed(home)) return home;
  mkdirSync(dirname(home), { recursive: true });
  await withBuildLock(home, () => {
    if (installed(home)) return;
    if (run('python3', ['-c', 'import venv, ensurepip']).status !== 0) {
      throw new BootstrapError('pgadmin', 'installing pgAdmin 4 needs python3 with venv and ensurepip (Debian: python3-venv)');
    }
    const started = Date.now();
    say(`installing pgAdmin ${version} (the database tool of the tests) from PyPI into ${home}; 30 s to a few minutes`);
    rmSync(home, { recursive: true, force: true });
    runLogged('pgadmin', 'python3', ['-m', 'venv', home], 'pgadmin-install.log');
    runLogged('pgadmin', python(home), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `pgadmin4==${version}`], 'pgadmin-install.log');
    if (!entryScript(home)) throw new BootstrapError('pgadmin', `pgAdmin ${version} installed but its pgAdmin4.py was not found in ${home}`);
    writeFileSync(join(home, '.installed'), `${version}\n`);
    say(`installed pgAdmin ${version} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'pgadmin');
  return home;
}

export interface StartPgadminOptions {
  /** pgAdmin's own state (its SQLite database, sessions, log); created when missing. */
  dataDir: string;
  port: number;
  /** The administrator created on the first start of `dataDir`. */
  email: string;
  /** Its initial password (at least 6 characters for pgAdmin; the setup route asks for 12). */
  password: string;
  /** How long to wait for `/misc/ping`. Default 120 s (the first start creates the database). */
  readyTimeoutMs?: number;
  version?: string;
  /** Outlive this process (the dev stack's `npm run pgadmin`); tests keep it attached. */
  detached?: boolean;
}

export interface PgadminServer {
  url: string;
  pid: number;
  logFile: string;
  stop(deadlineMs?: number): Promise<void>;
}

/** pgAdmin's settings for one data directory (Python). */
function configFile(dataDir: string, port: number): string {
  const py = (value: string) => JSON.stringify(value);
  return [
    'SERVER_MODE = True',
    `DATA_DIR = ${py(dataDir)}`,
    `LOG_FILE = ${py(join(dataDir, 'pgadmin4.log'))}`,
    "DEFAULT_SERVER = '127.0.0.1'",
    `DEFAULT_SERVER_PORT = ${port}`,
    // Nothing leaves the machine: no update check.
    'UPGRADE_CHECK_ENABLED = False',
    '',
  ].join('\n');
}

/** Starts pgAdmin in server mode and waits until `/misc/ping` answers. */
export async function startPgadmin(options: StartPgadminOptions): Promise<PgadminServer> {
  const home = pgadminHome(options.version);
  const script = existsSync(python(home)) ? entryScript(home) : undefined;
  if (!script) throw new BootstrapError('pgadmin', `pgAdmin is not installed in ${home}: the bootstrap (ops/dev/bootstrap.sh --tests) installs it`);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const config = join(options.dataDir, 'config_distro.py');
  writeFileSync(config, configFile(options.dataDir, options.port));
  const logFile = join(options.dataDir, 'pgadmin-stdout.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(python(home), [script], {
    detached: options.detached ?? false,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, CONFIG_DISTRO_FILE_PATH: config, PGADMIN_SETUP_EMAIL: options.email, PGADMIN_SETUP_PASSWORD: options.password },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new BootstrapError('pgadmin', `could not start ${script}`, logFile);
  if (options.detached) child.unref();
  const url = `http://127.0.0.1:${options.port}`;
  const server: PgadminServer = { url, pid: child.pid, logFile, stop: (deadlineMs) => stopProcess(child.pid ?? 0, deadlineMs, child) };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new BootstrapError('pgadmin', `pgAdmin exited (${child.exitCode}) while starting`, logFile);
    const ok = await fetch(`${url}/misc/ping`).then((r) => r.ok, () => false);
    if (ok) return server;
    await new Promise((r) => setTimeout(r, 500));
  }
  await server.stop();
  throw new BootstrapError('pgadmin', `pgAdmin did not answer ${url}/misc/ping in time`, logFile);
}
