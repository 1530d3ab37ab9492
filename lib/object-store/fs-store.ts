/**
 * The embedded object store (`OBJECT_STORE_BACKEND=fs`): each object is a file under a root
 * directory. A put streams into a temporary file beside the target, hashing as it goes, and
 * renames it into place only when length and checksum match, so readers never see half an object.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  assertValidKey, ObjectNotFoundError, ObjectVerificationError,
  type ObjectStore, type PutOptions, type StoredObject,
} from './types';

export class FsObjectStore implements ObjectStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private pathOf(key: string): string {
    assertValidKey(key);
    return join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<StoredObject> {
    const target = this.pathOf(key);
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${randomUUID()}.partial`;
    const hash = createHash('sha256');
    let bytes = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    try {
      await pipeline(body, meter, createWriteStream(temporary, { flags: 'wx' }));
      const sha256 = hash.digest('hex');
      if (opts.contentLength !== undefined && opts.contentLength !== bytes) {
        throw new ObjectVerificationError(`Object ${key}: expected ${opts.contentLength} bytes, received ${bytes}`);
      }
      if (opts.sha256 !== undefined && opts.sha256.toLowerCase() !== sha256) {
        throw new ObjectVerificationError(`Object ${key}: SHA-256 mismatch`);
      }
      await rename(temporary, target);
      return { bytes, sha256 };
    } finally {
      await rm(temporary, { force: true });
    }
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
}
