/**
 * versitygw (Versity S3 Gateway, Apache-2.0): a real S3 server over a POSIX directory, one Go
 * process, evaluated against SeaweedFS as the archive bench's server (docs/object-store.md).
 *
 * - `ensureVersitygwBinary`: builds `versitygw` from the Go module proxy's
 *   `github.com/versity/versitygw@<version>` as `ensureSeaweedfsBinary` builds `weed` (download,
 *   writable copy, `go build ./cmd/versitygw`). Cached as `.tools/versitygw/<version>/versitygw`.
 * - `startVersitygw`: `versitygw posix <dataDir>/buckets` on 127.0.0.1 with one root identity
 *   (passed in the environment, not argv), so requests are signed for real. It exits promptly on
 *   SIGTERM; `stop` still SIGKILLs after a deadline.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BootstrapError, LOGS, TOOLS, run, runLogged, say } from './sh';
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
    if (!go) throw new BootstrapError('versitygw', 'building versitygw needs Go >= 1.21 on PATH or in /usr/local/go/bin');
    const started = Date.now();
    say(`building versitygw ${version} from the Go module proxy; about 3 minutes on 2 cores`);
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
  /** `--data-integrity-etag`: ETags from the request's checksum, so no MD5 pass over the body. */
  checksumEtag?: boolean;
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
  if (!existsSync(options.binary)) throw new BootstrapError('versitygw', `${options.binary} is missing: ensureVersitygwBinary builds it`);
  const root = join(options.dataDir, 'buckets');
  mkdirSync(root, { recursive: true });
  const logFile = options.logFile ?? join(options.dataDir, 'versitygw.log');
  const fd = openSync(logFile, 'a');
  const args = ['--port', `127.0.0.1:${options.port}`, '--quiet', 'posix', ...(options.checksumEtag ? ['--data-integrity-etag'] : []), root];
  const child = spawn(options.binary, args, {
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ROOT_ACCESS_KEY_ID: options.credentials.accessKeyId, ROOT_SECRET_ACCESS_KEY: options.credentials.secretAccessKey },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new BootstrapError('versitygw', `could not start ${options.binary}`, logFile);
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
