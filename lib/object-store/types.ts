/**
 * The object-store seam: sandbox archives and workspace downloads are written and read as whole
 * objects by key. The embedded implementation is a directory (`fs-store.ts`); an S3-compatible one
 * is a later issue and plugs in behind the same interface.
 */
import type { Readable } from 'node:stream';

export interface PutOptions {
  /** Expected byte length; a different length fails the put and leaves no object. */
  contentLength?: number;
  /** Expected SHA-256 (hex) of the whole object; a mismatch fails the put and leaves no object. */
  sha256?: string;
}

export interface StoredObject {
  bytes: number;
  /** Hex SHA-256 of the whole object. */
  sha256: string;
}

export interface ObjectStore {
  /** Writes the whole object; it becomes visible only once completely written and verified. */
  put(key: string, body: Readable, opts?: PutOptions): Promise<StoredObject>;
  /** Streams an object; throws `ObjectNotFoundError` when there is none. */
  get(key: string): Promise<Readable>;
  /** Removes an object; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
}

export class ObjectNotFoundError extends Error {
  constructor(key: string) {
    super(`No object ${key} in the object store`);
    this.name = 'ObjectNotFound';
  }
}

/** A put whose body did not match the given length or checksum. */
export class ObjectVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ObjectVerification';
  }
}

/** Keys are `/`-separated segments of `[A-Za-z0-9._-]`, none of them `.` or `..`. */
export function assertValidKey(key: string): void {
  const segments = key.split('/');
  const ok = key.length > 0 && key.length <= 512 && segments.every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== '.' && s !== '..');
  if (!ok) throw new Error(`Invalid object key ${JSON.stringify(key)}: use /-separated segments of A-Z a-z 0-9 . _ - (no . or ..)`);
}
