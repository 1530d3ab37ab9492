/**
 * What the S3 servers of the dev stack, the tests and the archive bench share (docs/object-store.md
 * "The dev S3 server"): the identity they sign with, a Go to build them from the module proxy, a
 * free loopback port, the readiness probe (a signed ListBuckets) and the stop (SIGTERM, then
 * SIGKILL after a deadline). `versitygw.ts` is the server; `seaweedfs.ts` is kept for the bench's
 * comparison only.
 */
import type { ChildProcess } from 'node:child_process';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { run, tcpOpen } from './sh';
import { processAlive } from '../../lib/process-alive';

/** The one identity a server is started with: every request is signed with it and checked. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A `go` of at least 1.21 (which fetches the toolchain go.mod asks for from the module proxy). */
export function findGo(): string | undefined {
  for (const candidate of ['go', '/usr/local/go/bin/go', '/usr/lib/go/bin/go']) {
    const version = run(candidate, ['version']);
    const minor = /go1\.(\d+)/.exec(version.stdout)?.[1];
    if (version.status === 0 && minor !== undefined && Number(minor) >= 21) return candidate;
  }
  return undefined;
}


/** Polls a signed ListBuckets until it answers; fails early when `child` (named `name`) exits. */
export async function waitReady(endpoint: string, credentials: S3Credentials, timeoutMs: number, child: ChildProcess, name: string): Promise<void> {
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials, maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  let last = '';
  try {
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before S3 answered`);
      if (await tcpOpen('127.0.0.1', Number(new URL(endpoint).port))) {
        try {
          await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(3000) });
          return;
        } catch (err) {
          last = (err as Error).message;
        }
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    client.destroy();
  }
  throw new Error(`S3 on ${endpoint} not ready after ${Math.round(timeoutMs / 1000)} s${last ? ` (last error: ${last})` : ''}`);
}

/** SIGTERM, wait up to `deadlineMs`, then SIGKILL. Resolves once the process is gone. */
export async function stopProcess(pid: number, deadlineMs = 5000, child?: ChildProcess): Promise<void> {
  const gone = (): boolean => (child ? child.exitCode !== null || child.signalCode !== null : !processAlive(pid));
  if (!pid || gone()) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + deadlineMs;
  while (!gone() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (gone()) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  const killDeadline = Date.now() + 5000;
  while (!gone() && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, 50));
}
