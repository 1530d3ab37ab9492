/**
 * The S3 object store (`OBJECT_STORE_BACKEND=s3`) over `@aws-sdk/client-s3`, for any
 * S3-compatible service (tested against versitygw; docs/object-store.md). Every write is one
 * single PUT with a fixed `Content-Length`, the full-object `x-amz-checksum-sha256` (the server
 * refuses other bytes with `BadDigest`) and `If-None-Match: *` (write-once: 412 when the key
 * exists, after which the existing object is verified and accepted only if it is the same; a
 * connection reset is treated the same way when the key holds an object, since a server may
 * close the connection instead of delivering its early 412).
 * Verification compares the length and the stored full-object SHA-256 from a HEAD with checksum
 * mode enabled, and reads and hashes the object when the server keeps no such checksum.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { hashStream, writeHashed } from './hashing';
import {
  assertExpected, assertValidKey, isTransportError, MAX_OBJECT_BYTES, ObjectExistsError, ObjectNotFoundError, ObjectTooLargeError, ObjectVerificationError,
  UPLOAD_GRANT_SECONDS,
  type ExpectedObject, type GrantOptions, type ObjectStore, type PutOptions, type StoredObject, type UploadGrant, type Verification,
  type VerifyOptions,
} from './types';

export interface S3StoreOptions {
  /** Endpoint URL of an S3-compatible service; absent for AWS itself. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Static credentials; absent: the SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Address buckets by path (`<endpoint>/<bucket>/<key>`) rather than by host name. */
  forcePathStyle: boolean;
  /** Attempts per request, retries included (the SDK's default: 3). */
  maxAttempts?: number;
  /** Directory for spooling puts whose length or SHA-256 is not known up front. Default: the OS temp dir. */
  spoolDir?: string;
}

const silentLogger = { trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** Headers a presigned PUT signs and the uploader must send exactly. */
const SIGNED_UPLOAD_HEADERS = ['content-length', 'if-none-match', 'x-amz-checksum-sha256', 'x-amz-sdk-checksum-algorithm'];

export class S3ObjectStore implements ObjectStore {
  readonly client: S3Client;
  readonly bucket: string;
  private readonly spoolDir: string;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.spoolDir = options.spoolDir ?? tmpdir();
    this.client = new S3Client({
      region: options.region,
      forcePathStyle: options.forcePathStyle,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
      // Checksums are ours to choose: only the SHA-256 we pass, never an SDK-added CRC32 (which a
      // presigned URL would then require of the uploader).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Failures reach the caller as errors; without a logger the SDK also prints a refused
      // streaming PUT (a 412 or BadDigest we expect) to the console.
      logger: silentLogger,
    });
  }

  /** Creates the bucket when it is missing (only when told to: `S3_CREATE_BUCKET`). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return;
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    try {
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(nameOf(err))) throw err;
    }
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<StoredObject> {
    assertValidKey(key);
    if (opts.contentLength !== undefined && opts.contentLength > MAX_OBJECT_BYTES) throw new ObjectTooLargeError(opts.contentLength);
    if (opts.contentLength !== undefined && opts.sha256 !== undefined) {
      const expected = { length: opts.contentLength, sha256: opts.sha256.toLowerCase() };
      return this.putKnown(key, body, expected);
    }
    // S3 needs the length and the checksum before the first byte: spool to learn them.
    const dir = await mkdtemp(join(this.spoolDir, 's3-put-'));
    try {
      const file = join(dir, randomUUID());
      const received = await writeHashed(body, file);
      if (opts.contentLength !== undefined && opts.contentLength !== received.bytes) {
        throw new ObjectVerificationError(`Object ${key}: expected ${opts.contentLength} bytes, received ${received.bytes}`);
      }
      if (opts.sha256 !== undefined && opts.sha256.toLowerCase() !== received.sha256) throw new ObjectVerificationError(`Object ${key}: SHA-256 mismatch`);
      return await this.putKnown(key, createReadStream(file), { length: received.bytes, sha256: received.sha256 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * One conditional PUT of bytes whose length and SHA-256 are known. A 412, or a transport error
   * (whose outcome is unknown), → the object under the key is verified: the same object is success,
   * another one `ObjectExistsError`; after a transport error with no object there, the error stands.
   */
  private async putKnown(key: string, body: Readable, expected: ExpectedObject): Promise<StoredObject> {
    assertExpected(expected);
    try {
      await this.client.send(new PutObjectCommand({
        Bucket: this.bucket, Key: key, Body: body, ContentLength: expected.length,
        ChecksumAlgorithm: 'SHA256', ChecksumSHA256: hexToBase64(expected.sha256), IfNoneMatch: '*',
      }));
      return { bytes: expected.length, sha256: expected.sha256 };
    } catch (err) {
      if (nameOf(err) === 'BadDigest' || nameOf(err) === 'XAmzContentSHA256Mismatch') {
        throw new ObjectVerificationError(`Object ${key}: the store refused the body (${nameOf(err)}): its SHA-256 is not ${expected.sha256}`);
      }
      const refused = statusOf(err) === 412;
      // A connection reset may hide a 412: a server that refuses from the headers can close the
      // connection before it has read the body (versitygw beyond 256 KiB). The key decides.
      if (!refused && !isTransportError(err)) throw err;
      const existing = await this.verify(key, expected);
      if (existing.status === 'verified') return { bytes: expected.length, sha256: expected.sha256 };
      if (existing.status === 'missing') {
        if (refused) throw new ObjectExistsError(key, 'it vanished while being compared');
        throw err; // nothing stored: the PUT failed, and may be tried again
      }
      throw new ObjectExistsError(key, `its ${existing.reason} differs`);
    }
  }

  async get(key: string): Promise<Readable> {
    assertValidKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!(out.Body instanceof Readable)) throw new Error(`Object ${key}: the S3 client returned no readable body`);
      return out.Body;
    } catch (err) {
      if (statusOf(err) === 404) throw new ObjectNotFoundError(key);
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async verify(key: string, expected: ExpectedObject, opts: VerifyOptions = {}): Promise<Verification> {
    assertValidKey(key);
    assertExpected(expected);
    const want = expected.sha256.toLowerCase();
    let head;
    try {
      head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key, ChecksumMode: 'ENABLED' }));
    } catch (err) {
      if (statusOf(err) === 404) return { status: 'missing' };
      throw err;
    }
    const bytes = head.ContentLength ?? -1;
    if (bytes !== expected.length) return { status: 'mismatch', reason: 'length', bytes };
    const stored = fullObjectSha256(head.ChecksumSHA256, head.ChecksumType);
    if (stored !== undefined && stored !== want) return { status: 'mismatch', reason: 'sha256', bytes, sha256: stored };
    if (stored !== undefined && !opts.readBack) return { status: 'verified', bytes, sha256: stored, method: 'stored-checksum' };
    let read: StoredObject;
    try {
      read = await hashStream(await this.get(key));
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return { status: 'missing' };
      throw err;
    }
    if (read.bytes !== expected.length) return { status: 'mismatch', reason: 'length', bytes: read.bytes, sha256: read.sha256 };
    if (read.sha256 !== want) return { status: 'mismatch', reason: 'sha256', bytes: read.bytes, sha256: read.sha256 };
    return { status: 'verified', bytes: read.bytes, sha256: read.sha256, method: 'read' };
  }

  async grantUpload(key: string, expected: ExpectedObject, opts: GrantOptions = {}): Promise<UploadGrant> {
    assertValidKey(key);
    assertExpected(expected);
    const sha256 = expected.sha256.toLowerCase();
    const expiresIn = opts.expiresInSeconds ?? UPLOAD_GRANT_SECONDS;
    const expiresAt = new Date(Date.now() + expiresIn * 1000).toISOString();
    const command = new PutObjectCommand({
      Bucket: this.bucket, Key: key, ContentLength: expected.length,
      ChecksumAlgorithm: 'SHA256', ChecksumSHA256: hexToBase64(sha256), IfNoneMatch: '*',
    });
    const url = await getSignedUrl(this.client, command, {
      expiresIn,
      // Signed as headers, not hoisted into the query: the uploader cannot change the length, the
      // checksum or the condition without breaking the signature.
      signableHeaders: new Set(SIGNED_UPLOAD_HEADERS),
      unhoistableHeaders: new Set(SIGNED_UPLOAD_HEADERS),
    });
    const signed = new URL(url).searchParams.get('X-Amz-SignedHeaders')?.split(';') ?? [];
    const values: Record<string, string> = {
      'content-length': String(expected.length),
      'if-none-match': '*',
      'x-amz-checksum-sha256': hexToBase64(sha256),
      'x-amz-sdk-checksum-algorithm': 'SHA256',
    };
    const headers: Record<string, string> = {};
    for (const name of signed) {
      if (name === 'host') continue;
      const value = values[name];
      if (value === undefined) throw new Error(`Presigned PUT signs header ${name}, which the upload grant cannot supply`);
      headers[name] = value;
    }
    for (const name of ['content-length', 'if-none-match', 'x-amz-checksum-sha256']) {
      if (!(name in headers)) throw new Error(`Presigned PUT does not sign ${name}; refusing a grant the uploader could bend`);
    }
    // Whether the key holds an object, for an uploader whose PUT ended in a connection reset.
    const headUrl = await getSignedUrl(this.client, new HeadObjectCommand({ Bucket: this.bucket, Key: key }), { expiresIn });
    return { kind: 'http-put', key, length: expected.length, sha256, expiresAt, url, headers, headUrl };
  }
}

/** The hex SHA-256 from a HEAD's checksum when it is a full-object one (not a multipart composite). */
function fullObjectSha256(checksum: string | undefined, type: string | undefined): string | undefined {
  if (!checksum || type === 'COMPOSITE' || checksum.includes('-')) return undefined;
  const raw = Buffer.from(checksum, 'base64');
  return raw.length === 32 ? raw.toString('hex') : undefined;
}

export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

function nameOf(err: unknown): string {
  return (err as { name?: string; Code?: string }).Code ?? (err as { name?: string }).name ?? '';
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}
