/**
 * SeaweedFS, kept for the archive bench's comparison (`npm run bench:sandbox-archive -- --server
 * seaweedfs|both`, which builds it on demand); the tests and the dev stack use versitygw
 * (versitygw.ts; docs/object-store.md "The dev S3 server").
 *
 * - `ensureSeaweedfsBinary`: builds `weed` from the Go module proxy's
 *   `github.com/seaweedfs/seaweedfs@<version>` (its go.mod has replace directives, so `go install
 *   module@version` refuses it: the module is downloaded, copied to a writable directory and built
 *   there). Cached as `.tools/seaweedfs/<version>/weed`, keyed by version; concurrent builds (two
 *   clones sharing `.tools`) are serialized by a lock directory. About 4.5 minutes on 2 cores.
 * - `startSeaweedfs`: one `weed server -s3` process (master, volume, filer, S3) on 127.0.0.1 with
 *   the given ports, data directory and one S3 identity (`-s3.config`), so requests are signed
 *   for real. `weed` does not stop promptly on SIGTERM: `stop` waits a deadline, then SIGKILLs.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BootstrapError, LOGS, TOOLS, run, runLogged, say } from './sh';
import { withBuildLock } from './build-lock';
import { findGo, stopProcess, waitReady, type S3Credentials } from './s3-server';

export const SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs';
/** Pinned pseudo-version (SeaweedFS 4.53's S3 layer: `If-None-Match: *` → 412, `BadDigest`, checksum on HEAD). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';

/** Where the cached binary of a version lives. */
export function seaweedfsBinary(version: string = SEAWEEDFS_VERSION): string {
  return join(TOOLS, 'seaweedfs', version, 'weed');
}

function binaryWorks(binary: string): boolean {
  return existsSync(binary) && run(binary, ['version']).status === 0;
}

/** Builds and caches `weed` unless the cached binary of this version runs. Idempotent. */
export async function ensureSeaweedfsBinary(version: string = SEAWEEDFS_VERSION): Promise<string> {
  const binary = seaweedfsBinary(version);
  if (binaryWorks(binary)) return binary;
  const dir = join(TOOLS, 'seaweedfs', version);
  mkdirSync(dir, { recursive: true });
  mkdirSync(LOGS, { recursive: true });
  await withBuildLock(dir, () => {
    if (binaryWorks(binary)) return; // another build finished while we waited
    const go = findGo();
    if (!go) {
      throw new BootstrapError('seaweedfs', 'building SeaweedFS needs Go >= 1.21 on PATH or in /usr/local/go/bin; install it (https://go.dev/dl/)');
    }
    const started = Date.now();
    say(`building SeaweedFS ${version} (weed, for the archive bench's comparison) from the Go module proxy; about 4.5 minutes on 2 cores`);
    const downloaded = run(go, ['mod', 'download', '-json', `${SEAWEEDFS_MODULE}@${version}`], { cwd: tmpdir() });
    const moduleDir = downloaded.status === 0 ? (JSON.parse(downloaded.stdout) as { Dir?: string }).Dir : undefined;
    if (!moduleDir) throw new BootstrapError('seaweedfs', `go mod download ${SEAWEEDFS_MODULE}@${version} failed: ${downloaded.stderr.trim() || downloaded.stdout.trim()}`);
    // The module cache is read-only, and the build writes beside the sources: build in a copy.
    const work = mkdtempSync(join(tmpdir(), 'seaweedfs-build-'));
    const partial = `${binary}.partial-${process.pid}`;
    try {
      runLogged('seaweedfs', 'cp', ['-r', `${moduleDir}/.`, work], 'seaweedfs-build.log');
      runLogged('seaweedfs', 'chmod', ['-R', 'u+w', work], 'seaweedfs-build.log');
      runLogged('seaweedfs', 'sh', ['-c', `cd "${work}" && exec "${go}" build -o "${partial}" ./weed`], 'seaweedfs-build.log');
      renameSync(partial, binary);
    } finally {
      rmSync(work, { recursive: true, force: true });
      rmSync(partial, { force: true });
    }
    if (!binaryWorks(binary)) throw new BootstrapError('seaweedfs', `${binary} does not run after the build`, join(LOGS, 'seaweedfs-build.log'));
    say(`built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'seaweedfs');
  return binary;
}

export interface SeaweedfsPorts {
  master: number;
  volume: number;
  filer: number;
  s3: number;
}

/** True when `port` can be bound on 127.0.0.1 right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port whose gRPC companion (port + 10000, weed's rule) is free too. */
async function freePortPair(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if (await bindable(port) && await bindable(port + 10_000)) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error('no free loopback port pair for SeaweedFS');
}

/** Free loopback ports for every service of one `weed server` (tests and benches: one server per run). */
export async function freeSeaweedfsPorts(): Promise<SeaweedfsPorts> {
  const taken = new Set<number>();
  return { master: await freePortPair(taken), volume: await freePortPair(taken), filer: await freePortPair(taken), s3: await freePortPair(taken) };
}

export interface StartSeaweedfsOptions {
  binary: string;
  /** Volumes, filer metadata and the identities file go here. */
  dataDir: string;
  ports: SeaweedfsPorts;
  credentials: S3Credentials;
  /** Log file (appended); default `<dataDir>/weed.log`. */
  logFile?: string;
  /** Outlive this process (the dev stack); tests keep it attached. */
  detached?: boolean;
  /** How long to wait for S3 to answer a signed request. Default 60 s. */
  readyTimeoutMs?: number;
}

export interface SeaweedfsServer {
  endpoint: string;
  pid: number;
  logFile: string;
  /** SIGTERM, then SIGKILL after `deadlineMs` (default 5 s). */
  stop(deadlineMs?: number): Promise<void>;
}

/** The `-s3.config` identities: one identity with every action, so each request is signed and checked. */
export function identitiesJson(credentials: S3Credentials): string {
  return JSON.stringify({
    identities: [{
      name: 'object-store',
      credentials: [{ accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey }],
      actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'],
    }],
  }, null, 2);
}

export function weedServerArgs(options: Pick<StartSeaweedfsOptions, 'dataDir' | 'ports'>, configFile: string): string[] {
  const { ports } = options;
  return [
    'server', '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-dir=${join(options.dataDir, 'volumes')}`,
    `-master.port=${ports.master}`, `-master.port.grpc=${ports.master + 10000}`, '-master.telemetry=false', '-master.volumeSizeLimitMB=1024',
    `-volume.port=${ports.volume}`, `-volume.port.grpc=${ports.volume + 10000}`, '-volume.preStopSeconds=0', '-volume.max=64',
    '-filer', `-filer.port=${ports.filer}`, `-filer.port.grpc=${ports.filer + 10000}`,
    '-s3', `-s3.port=${ports.s3}`, `-s3.port.grpc=${ports.s3 + 10000}`, '-s3.port.iceberg=0', '-s3.port.lance=0', '-s3.iam=false',
    `-s3.config=${configFile}`,
  ];
}

/** Starts `weed server -s3` and waits until S3 answers a signed ListBuckets. */
export async function startSeaweedfs(options: StartSeaweedfsOptions): Promise<SeaweedfsServer> {
  if (!existsSync(options.binary)) {
    throw new BootstrapError('seaweedfs', `${options.binary} is missing: ensureSeaweedfsBinary builds it`);
  }
  mkdirSync(join(options.dataDir, 'volumes'), { recursive: true });
  const configFile = join(options.dataDir, 's3-identities.json');
  writeFileSync(configFile, identitiesJson(options.credentials), { mode: 0o600 });
  const logFile = options.logFile ?? join(options.dataDir, 'weed.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(options.binary, weedServerArgs(options, configFile), {
    detached: options.detached ?? false, stdio: ['ignore', fd, fd],
    // One new volume per bucket (collection) instead of 7: tests make many small buckets.
    env: { ...process.env, WEED_MASTER_VOLUME_GROWTH_COPY_1: '1' },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new BootstrapError('seaweedfs', `could not start ${options.binary}`, logFile);
  if (options.detached) child.unref();
  const endpoint = `http://127.0.0.1:${options.ports.s3}`;
  const stop = async (deadlineMs?: number): Promise<void> => {
    await stopProcess(child.pid ?? 0, deadlineMs, child);
    removeGrpcSockets(options.ports);
  };
  const server: SeaweedfsServer = { endpoint, pid: child.pid, logFile, stop };
  try {
    await waitReady(endpoint, options.credentials, options.readyTimeoutMs ?? 60_000, child, 'weed');
  } catch (err) {
    await server.stop();
    throw new BootstrapError('seaweedfs', (err as Error).message, logFile);
  }
  return server;
}

/** weed registers a local socket per gRPC port (`/tmp/seaweedfs-<service>-grpc-<port>.sock`) and a killed weed leaves it behind. */
function removeGrpcSockets(ports: SeaweedfsPorts): void {
  for (const [service, port] of Object.entries(ports)) rmSync(join('/tmp', `seaweedfs-${service}-grpc-${port + 10000}.sock`), { force: true });
}
