/**
 * The embedded object store (`OBJECT_STORE_BACKEND=fs`): each object is a file under a root
 * directory. A write streams into a temporary file beside the target, hashing as it goes, and is
 * hard-linked into place only when length and checksum match, so readers never see half an
 * object; `link` fails on an existing target, which makes every write put-if-absent, atomically.
 * Same rules as the S3 store (docs/object-store.md): write-once keys, 5 GiB per object, upload
 * grants that expire, verification by length and SHA-256 (always by reading the file).
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { hashStream, writeHashed } from './hashing';
import {
  assertExpected, assertValidKey, MAX_OBJECT_BYTES, ObjectExistsError, ObjectNotFoundError, ObjectTooLargeError,
  ObjectVerificationError, UPLOAD_GRANT_SECONDS,
  type ExpectedObject, type GrantOptions, type ObjectStore, type PutOptions, type StoredObject, type UploadGrant, type Verification,
} from './types';

/** Result of a put-if-absent write: `exists` means the key already held an object (not compared). */
export interface CreateResult {
  status: 'created' | 'exists';
  /** Length and SHA-256 of the bytes received. */
  received: StoredObject;
}

export class FsObjectStore implements ObjectStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private pathOf(key: string): string {
    assertValidKey(key);
    return join(this.root, ...key.split('/'));
  }

  /**
   * Put-if-absent: writes `body` under `key` unless the key holds an object. The body is checked
   * against `opts` first (`ObjectVerificationError` on a mismatch, nothing written).
   */
  async create(key: string, body: Readable, opts: PutOptions = {}): Promise<CreateResult> {
    const target = this.pathOf(key);
    if (opts.contentLength !== undefined && opts.contentLength > MAX_OBJECT_BYTES) throw new ObjectTooLargeError(opts.contentLength);
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${randomUUID()}.partial`;
    try {
      const received = await writeHashed(body, temporary);
      if (opts.contentLength !== undefined && opts.contentLength !== received.bytes) {
        throw new ObjectVerificationError(`Object ${key}: expected ${opts.contentLength} bytes, received ${received.bytes}`);
      }
      if (opts.sha256 !== undefined && opts.sha256.toLowerCase() !== received.sha256) {
        throw new ObjectVerificationError(`Object ${key}: SHA-256 mismatch`);
      }
      try {
        await link(temporary, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { status: 'exists', received };
        throw err;
      }
      return { status: 'created', received };
    } finally {
      await rm(temporary, { force: true });
    }
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<StoredObject> {
    const result = await this.create(key, body, opts);
    if (result.status === 'created') return result.received;
    const existing = await this.verify(key, { length: result.received.bytes, sha256: result.received.sha256 });
    if (existing.status === 'verified') return result.received;
    throw new ObjectExistsError(key, existing.status === 'missing' ? 'it vanished while being compared' : `its ${existing.reason} differs`);
  }

  async get(key: string): Promise<Readable> {
    const path = this.pathOf(key);
    try {
      if (!(await stat(path)).isFile()) throw new ObjectNotFoundError(key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ObjectNotFoundError(key);
      throw err;
    }
    return createReadStream(path);
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  /** Always reads and hashes the file: a directory keeps no checksum it could vouch for. */
  async verify(key: string, expected: ExpectedObject): Promise<Verification> {
    assertExpected(expected);
    const path = this.pathOf(key);
    let size: number;
    try {
      const info = await stat(path);
      if (!info.isFile()) return { status: 'missing' };
      size = info.size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { status: 'missing' };
      throw err;
    }
    if (size !== expected.length) return { status: 'mismatch', reason: 'length', bytes: size };
    const read = await hashStream(createReadStream(path));
    if (read.bytes !== expected.length) return { status: 'mismatch', reason: 'length', bytes: read.bytes, sha256: read.sha256 };
    if (read.sha256 !== expected.sha256.toLowerCase()) return { status: 'mismatch', reason: 'sha256', bytes: read.bytes, sha256: read.sha256 };
    return { status: 'verified', bytes: read.bytes, sha256: read.sha256, method: 'read' };
  }

  /** The host runner performs an `fs` grant through its own `FsObjectStore` on the shared directory. */
  grantUpload(key: string, expected: ExpectedObject, opts: GrantOptions = {}): Promise<UploadGrant> {
    try {
      assertValidKey(key);
      assertExpected(expected);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const expiresAt = new Date(Date.now() + (opts.expiresInSeconds ?? UPLOAD_GRANT_SECONDS) * 1000).toISOString();
    return Promise.resolve({ kind: 'fs', key, length: expected.length, sha256: expected.sha256.toLowerCase(), expiresAt });
  }
}
