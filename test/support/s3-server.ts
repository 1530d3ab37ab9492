/**
 * A real S3 server for tests: one `versitygw posix` per test run, started from the binary the
 * bootstrap caches (`.tools/versitygw/<version>/versitygw`) on a free loopback port with a
 * temporary data directory and a random identity, and stopped by the root hook. No binary is a
 * failure that names the bootstrap, never a skip. Each test file uses its own bucket.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3ObjectStore } from '../../lib/object-store';
import { atRunEnd } from './root-hooks';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import type { S3Credentials } from '../../ops/dev/s3-server';
import { startVersitygw, versitygwBinary, type VersitygwServer } from '../../ops/dev/versitygw';

export interface TestS3 {
  server: VersitygwServer;
  endpoint: string;
  credentials: S3Credentials;
  dataDir: string;
  /** Where the server keeps an object's bytes: a plain file (versitygw's posix backend). */
  objectPath(bucket: string, key: string): string;
}

let s3Promise: Promise<TestS3> | undefined;

/** The run's S3 server (started on first use). */
export function testS3(): Promise<TestS3> {
  s3Promise ??= (async () => {
    const binary = versitygwBinary();
    if (!existsSync(binary)) {
      throw new Error(`versitygw binary ${binary} is missing: run the bootstrap (bash ops/dev/bootstrap.sh, part of npm test), which builds and caches it`);
    }
    const dataDir = mkdtempSync(join(tmpdir(), 'versitygw-test-'));
    atRunEnd(teardownS3);
    const credentials = { accessKeyId: `test${randomBytes(8).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') };
    const server = await startVersitygw({ binary, dataDir, port: await freeLoopbackPort(), credentials });
    const objectPath = (bucket: string, key: string): string => join(dataDir, 'buckets', bucket, ...key.split('/'));
    return { server, endpoint: server.endpoint, credentials, dataDir, objectPath };
  })();
  return s3Promise;
}

/** A new bucket on the run's server and an `S3ObjectStore` on it. */
export async function testS3Store(prefix = 'test'): Promise<{ store: S3ObjectStore; bucket: string; s3: TestS3; client: S3Client }> {
  const s3 = await testS3();
  const bucket = `${prefix}-${randomBytes(6).toString('hex')}`;
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3.credentials });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const store = new S3ObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket, forcePathStyle: true, credentials: s3.credentials });
  return { store, bucket, s3, client };
}

/** Stops the run's server (SIGTERM, then SIGKILL after a deadline) and removes its data. */
export async function teardownS3(): Promise<void> {
  if (!s3Promise) return;
  const pending = s3Promise;
  s3Promise = undefined;
  const s3 = await pending.catch(() => undefined);
  if (!s3) return;
  await s3.server.stop(3000);
  rmSync(s3.dataDir, { recursive: true, force: true });
}
