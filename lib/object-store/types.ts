/**
 * The object-store seam: sandbox archives and workspace downloads are written and read as whole
 * objects by key. Two implementations share one contract and one conformance suite
 * (test/integration/object-store/): a directory (`fs-store.ts`, the embedded default) and any
 * S3-compatible service (`s3-store.ts`). docs/object-store.md gives the upload protocol and the
 * verification rules.
 *
 * Objects are write-once: a key that holds an object is never overwritten (put-if-absent), so a
 * retried upload can never replace a verified archive with another one.
 */
import type { Readable } from 'node:stream';

/** Largest object: one S3 single PUT (5 GiB). Larger archives are refused before any upload ("larger keeps the container"). */
export const MAX_OBJECT_BYTES = 5 * 1024 ** 3;

/** Lifetime of an upload grant (a presigned PUT): 15 minutes. */
export const UPLOAD_GRANT_SECONDS = 15 * 60;

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

/** What an object must be to count as the one a caller wrote: its exact length and SHA-256 (hex). */
export interface ExpectedObject {
  length: number;
  sha256: string;
}

/**
 * Outcome of `verify`. `verified` only when both the length and the SHA-256 match; `method` says
 * whether the SHA-256 came from the store's stored full-object checksum or from reading the bytes.
 */
export type Verification =
  | { status: 'verified'; bytes: number; sha256: string; method: 'stored-checksum' | 'read' }
  | { status: 'missing' }
  | { status: 'mismatch'; reason: 'length' | 'sha256'; bytes: number; sha256?: string };

export interface VerifyOptions {
  /** Read and hash the whole object even when the store reports a stored checksum. */
  readBack?: boolean;
}

/**
 * Permission to write exactly one object, handed to whoever holds the bytes (a host runner) so
 * it needs no store credentials. Plain JSON, so it can travel as a Temporal activity argument.
 * - `http-put`: a presigned S3 PUT: send `headers` exactly as given (fixed `content-length`,
 *   `x-amz-checksum-sha256`, `if-none-match: *`) with a body of `length` bytes. `headUrl`, a
 *   presigned HEAD of the same key with the same expiry, tells the uploader after a connection
 *   reset whether the key holds an object (a refusal the server sent before reading the whole
 *   body can arrive as a reset: docs/object-store.md "The dev S3 server"). Absent from grants
 *   made before it existed.
 * - `fs`: the embedded store's equivalent; the host runner writes through its own `FsObjectStore`
 *   on the shared directory, with the same rules (expiry, length, SHA-256, put-if-absent).
 */
export type UploadGrant = {
  key: string;
  length: number;
  /** Hex SHA-256 the object must have. */
  sha256: string;
  /** ISO time after which the grant is refused. */
  expiresAt: string;
} & ({ kind: 'http-put'; url: string; headers: Record<string, string>; headUrl?: string } | { kind: 'fs' });

export interface GrantOptions {
  /** Lifetime in seconds. Default `UPLOAD_GRANT_SECONDS` (15 minutes). */
  expiresInSeconds?: number;
}

export interface ObjectStore {
  /**
   * Writes the whole object; it becomes visible only once completely written and verified.
   * Put-if-absent: when the key already holds an object, that object is verified against the
   * bytes just received; if it matches, the put succeeds (an idempotent retry), otherwise it fails
   * with `ObjectExistsError` and the existing object is left as it was.
   */
  put(key: string, body: Readable, opts?: PutOptions): Promise<StoredObject>;
  /** Streams an object; throws `ObjectNotFoundError` when there is none. */
  get(key: string): Promise<Readable>;
  /** Removes an object; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Checks that the object under `key` has exactly the expected length and SHA-256. Never takes
   * the store's word blindly: without a stored full-object checksum (or with `readBack`), the
   * object is read and hashed.
   */
  verify(key: string, expected: ExpectedObject, opts?: VerifyOptions): Promise<Verification>;
  /**
   * An upload grant for exactly one object of `expected.length` bytes and SHA-256 under `key`.
   * Throws `ObjectTooLargeError` above `MAX_OBJECT_BYTES`, before anything is uploaded.
   */
  grantUpload(key: string, expected: ExpectedObject, opts?: GrantOptions): Promise<UploadGrant>;
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

/** A put to a key that already holds a different object (objects are write-once). */
export class ObjectExistsError extends Error {
  constructor(key: string, detail: string) {
    super(`Object ${key} already exists and differs from the one being written: ${detail}`);
    this.name = 'ObjectExists';
  }
}

/** An object above `MAX_OBJECT_BYTES`: refused before upload (the caller keeps its source). */
export class ObjectTooLargeError extends Error {
  constructor(readonly bytes: number) {
    super(`Object of ${bytes} bytes is larger than the single-upload limit of ${MAX_OBJECT_BYTES} bytes (5 GiB)`);
    this.name = 'ObjectTooLarge';
  }
}

/** An upload refused by the grant itself: expired, or its signature no longer matches. */
export class UploadGrantRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UploadGrantRefused';
  }
}

/** Keys are `/`-separated segments of `[A-Za-z0-9._-]`, none of them `.` or `..`. */
export function assertValidKey(key: string): void {
  const segments = key.split('/');
  const ok = key.length > 0 && key.length <= 512 && segments.every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== '.' && s !== '..');
  if (!ok) throw new Error(`Invalid object key ${JSON.stringify(key)}: use /-separated segments of A-Z a-z 0-9 . _ - (no . or ..)`);
}

/** Validates what a grant or a verification expects: a length within bounds and a hex SHA-256. */
export function assertExpected(expected: ExpectedObject): void {
  if (!Number.isSafeInteger(expected.length) || expected.length < 0) throw new Error(`Invalid object length ${expected.length}`);
  if (!/^[0-9a-f]{64}$/i.test(expected.sha256)) throw new Error('Invalid SHA-256: expected 64 hex digits');
  if (expected.length > MAX_OBJECT_BYTES) throw new ObjectTooLargeError(expected.length);
}

/** Socket errors after which a PUT's outcome is unknown: the connection broke before a response was read. */
const TRANSPORT_ERROR_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Whether `err` is a transport error (`ECONNRESET`, `EPIPE`, `socket hang up`), here or in its
 * `cause`: the request may or may not have been refused or stored, so the key must be looked at
 * (HEAD) before the outcome is decided.
 */
export function isTransportError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth += 1) {
    const code = (e as NodeJS.ErrnoException).code;
    if ((code !== undefined && TRANSPORT_ERROR_CODES.has(code)) || /socket hang up/i.test(e.message)) return true;
  }
  return false;
}

/** Whether an upload grant has expired at `now`. */
export function grantExpired(grant: Pick<UploadGrant, 'expiresAt'>, now: Date = new Date()): boolean {
  return now.getTime() >= Date.parse(grant.expiresAt);
}
