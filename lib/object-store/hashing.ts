/**
 * Hashing while streaming, shared by both stores: the length and SHA-256 of what passed through.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MAX_OBJECT_BYTES, ObjectTooLargeError, type StoredObject } from './types';

/** Streams `body` into a new file at `path`, returning its length and SHA-256; refuses past 5 GiB. */
export async function writeHashed(body: Readable, path: string): Promise<StoredObject> {
  const hash = createHash('sha256');
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (bytes > MAX_OBJECT_BYTES) return callback(new ObjectTooLargeError(bytes));
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  await pipeline(body, meter, createWriteStream(path, { flags: 'wx' }));
  return { bytes, sha256: hash.digest('hex') };
}

/** Length and SHA-256 (hex) of everything a stream yields. */
export async function hashStream(stream: Readable): Promise<StoredObject> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    const buffer = chunk as Buffer;
    bytes += buffer.length;
    hash.update(buffer);
  }
  return { bytes, sha256: hash.digest('hex') };
}
