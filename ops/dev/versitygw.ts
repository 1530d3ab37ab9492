/**
 * versitygw (Versity S3 Gateway, Apache-2.0), the real S3-compatible server of the tests and of
 * `npm start` with `OBJECT_STORE_BACKEND=s3`: an S3 gateway over a POSIX directory, one Go
 * process (docs/object-store.md "The dev S3 server").
 *
 * - `ensureVersitygwBinary`: builds `versitygw` from the Go module proxy's
 *   `github.com/versity/versitygw@<version>` (download, writable copy, `go build ./cmd/versitygw`).
 *   Cached as `.tools/versitygw/<version>/versitygw`, keyed by version; concurrent builds (two
 *   clones sharing `.tools`) are serialized by a lock directory. About 1-3 minutes on 2 cores.
 * - `startVersitygw`: `versitygw posix <dataDir>/buckets` on 127.0.0.1 with one root identity
 *   (passed in the environment, not argv), so requests are signed for real. It exits promptly on
 *   SIGTERM; `stop` still SIGKILLs after a deadline.
 * - `ensureDevVersitygw` / `stopDevVersitygw`: the dev stack's server (`npm start`, `npm run stack:stop`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { BootstrapError, DATA, LOGS, RUN, TOOLS, run, runLogged, say, tcpOpen } from './sh';
import { processAlive } from '../../lib/process-alive';
import { withBuildLock } from './build-lock';
import { findGo, stopProcess, waitReady, type S3Credentials } from './s3-server';

export const VERSITYGW_MODULE = 'github.com/versity/versitygw';
/** The newest release on the module proxy (2026-09-04). */
export const VERSITYGW_VERSION = 'v1.8.0';

/** Where the cached binary of a version lives. */
export function versitygwBinary(version: string = VERSITYGW_VERSION): string {
  return join(TOOLS, 'versitygw', version, 'versitygw');
}

function binaryWorks(binary: string): boolean {
  return existsSync(binary) && run(binary, ['--version']).status === 0;
}

/** Builds and caches `versitygw` unless the cached binary of this version runs. Idempotent. */
export async function ensureVersitygwBinary(version: string = VERSITYGW_VERSION): Promise<string> {
  const binary = versitygwBinary(version);
  if (binaryWorks(binary)) return binary;
  const dir = join(TOOLS, 'versitygw', version);
  mkdirSync(dir, { recursive: true });
  mkdirSync(LOGS, { recursive: true });
  await withBuildLock(dir, () => {
    if (binaryWorks(binary)) return;
    const go = findGo();
    if (!go) {
      throw new BootstrapError('versitygw', 'building the S3 test server (versitygw) needs Go >= 1.21 on PATH or in /usr/local/go/bin; install it (https://go.dev/dl/), then run the bootstrap again');
    }
    const started = Date.now();
    say(`building versitygw ${version} (the S3 server of the tests) from the Go module proxy; about 1-3 minutes on 2 cores`);
    const downloaded = run(go, ['mod', 'download', '-json', `${VERSITYGW_MODULE}@${version}`], { cwd: tmpdir() });
    const moduleDir = downloaded.status === 0 ? (JSON.parse(downloaded.stdout) as { Dir?: string }).Dir : undefined;
    if (!moduleDir) throw new BootstrapError('versitygw', `go mod download ${VERSITYGW_MODULE}@${version} failed: ${downloaded.stderr.trim() || downloaded.stdout.trim()}`);
    const work = mkdtempSync(join(tmpdir(), 'versitygw-build-'));
    const partial = `${binary}.partial-${process.pid}`;
    try {
      runLogged('versitygw', 'cp', ['-r', `${moduleDir}/.`, work], 'versitygw-build.log');
      runLogged('versitygw', 'chmod', ['-R', 'u+w', work], 'versitygw-build.log');
      runLogged('versitygw', 'sh', ['-c', `cd "${work}" && exec "${go}" build -ldflags "-X=main.Version=${version}" -o "${partial}" ./cmd/versitygw`], 'versitygw-build.log');
      renameSync(partial, binary);
    } finally {
      rmSync(work, { recursive: true, force: true });
      rmSync(partial, { force: true });
    }
    if (!binaryWorks(binary)) throw new BootstrapError('versitygw', `${binary} does not run after the build`, join(LOGS, 'versitygw-build.log'));
    say(`built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'versitygw');
  return binary;
}

export interface StartVersitygwOptions {
  binary: string;
  /** Buckets are directories under `<dataDir>/buckets`. */
  dataDir: string;
  credentials: S3Credentials;
  port: number;
  /** Log file (appended); default `<dataDir>/versitygw.log`. */
  logFile?: string;
  /** How long to wait for S3 to answer a signed request. Default 30 s. */
  readyTimeoutMs?: number;
  /**
   * `--data-integrity-etag`: ETags from the request's checksum, so no MD5 pass over the body (this
   * contract never reads an ETag). Default true; false keeps versitygw's MD5 ETags (the bench's `versitygw-md5`).
   */
  checksumEtag?: boolean;
  /** Outlive this process (the dev stack); tests keep it attached. */
  detached?: boolean;
}

export interface VersitygwServer {
  endpoint: string;
  pid: number;
  logFile: string;
  /** SIGTERM, then SIGKILL after `deadlineMs` (default 5 s). */
  stop(deadlineMs?: number): Promise<void>;
}

/** Starts `versitygw posix` and waits until S3 answers a signed ListBuckets. */
export async function startVersitygw(options: StartVersitygwOptions): Promise<VersitygwServer> {
  if (!existsSync(options.binary)) {
    throw new BootstrapError('versitygw', `${options.binary} is missing: the bootstrap (ops/dev/bootstrap.sh) builds it`);
  }
  const root = join(options.dataDir, 'buckets');
  mkdirSync(root, { recursive: true });
  const logFile = options.logFile ?? join(options.dataDir, 'versitygw.log');
  const fd = openSync(logFile, 'a');
  const args = ['--port', `127.0.0.1:${options.port}`, '--quiet', 'posix', ...(options.checksumEtag ?? true ? ['--data-integrity-etag'] : []), root];
  const child = spawn(options.binary, args, {
    detached: options.detached ?? false, stdio: ['ignore', fd, fd],
    env: { ...process.env, ROOT_ACCESS_KEY_ID: options.credentials.accessKeyId, ROOT_SECRET_ACCESS_KEY: options.credentials.secretAccessKey },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new BootstrapError('versitygw', `could not start ${options.binary}`, logFile);
  if (options.detached) child.unref();
  const endpoint = `http://127.0.0.1:${options.port}`;
  const server: VersitygwServer = { endpoint, pid: child.pid, logFile, stop: (deadlineMs) => stopProcess(child.pid ?? 0, deadlineMs, child) };
  try {
    await waitReady(endpoint, options.credentials, options.readyTimeoutMs ?? 30_000, child, 'versitygw');
  } catch (err) {
    await server.stop();
    throw new BootstrapError('versitygw', (err as Error).message, logFile);
  }
  return server;
}

/** S3 port of the dev server (`VERSITYGW_PORT`, default 7070). */
export function devS3Port(env: NodeJS.ProcessEnv = process.env): number {
  const port = Number(env.VERSITYGW_PORT ?? 7070);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new BootstrapError('versitygw', `VERSITYGW_PORT=${env.VERSITYGW_PORT} is not a port (1-65535)`);
  return port;
}

/** The dev server's identity, generated once and kept in `.data/secrets/` (mode 0600). */
function devCredentials(): S3Credentials {
  const dir = join(DATA, 'secrets');
  const path = join(dir, 'versitygw-s3.json');
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const credentials = { accessKeyId: `dev${randomBytes(8).toString('hex')}`, secretAccessKey: randomBytes(30).toString('base64url') };
    writeFileSync(path, JSON.stringify(credentials), { mode: 0o600 });
  }
  return JSON.parse(readFileSync(path, 'utf8')) as S3Credentials;
}

/**
 * `npm start` with `OBJECT_STORE_BACKEND=s3` and no `S3_ENDPOINT`: the dev versitygw (started
 * detached unless its port answers; buckets in `.data/versitygw/buckets`, log
 * `.data/logs/versitygw.log`, stopped by `npm run stack:stop`) and the settings that point the
 * stack at it.
 */
export async function ensureDevVersitygw(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, string>> {
  const port = devS3Port(env);
  const credentials = devCredentials();
  const endpoint = `http://127.0.0.1:${port}`;
  if (await tcpOpen('127.0.0.1', port)) {
    const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials, maxAttempts: 1 });
    try {
      await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5000) });
    } catch (err) {
      throw new BootstrapError('versitygw', `port ${port} answers but is not this stack's S3 server (${(err as Error).message}); free it or set VERSITYGW_PORT`);
    } finally {
      client.destroy();
    }
  } else {
    const binary = await ensureVersitygwBinary();
    say(`starting versitygw (S3 ${endpoint}, data in .data/versitygw)`);
    mkdirSync(LOGS, { recursive: true });
    const server = await startVersitygw({
      binary, dataDir: join(DATA, 'versitygw'), port, credentials, logFile: join(LOGS, 'versitygw.log'), detached: true,
    });
    mkdirSync(RUN, { recursive: true });
    writeFileSync(join(RUN, 'versitygw.pid'), String(server.pid));
  }
  return {
    S3_ENDPOINT: endpoint,
    S3_BUCKET: env.S3_BUCKET ?? 'sandbox-archives',
    S3_ACCESS_KEY_ID: credentials.accessKeyId,
    S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
    S3_CREATE_BUCKET: 'true',
  };
}

/** `npm run stack:stop`: stops the dev server it started (SIGTERM, SIGKILL after 10 s). */
export async function stopDevVersitygw(): Promise<void> {
  const file = join(RUN, 'versitygw.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8'));
  if (processAlive(pid)) {
    await stopProcess(pid, 10_000);
    say(`stopped versitygw (pid ${pid})`);
  }
  rmSync(file, { force: true });
}
