/**
 * Performs an upload grant (types.ts `UploadGrant`) where the bytes are: a host runner streams a
 * sandbox archive to the store without holding store credentials. One function for both kinds:
 * an `http-put` grant is a raw HTTP PUT of exactly the signed headers; an `fs` grant writes
 * through the host runner's own `FsObjectStore` with the same rules.
 *
 * The outcome is `created` or `exists` (412: the key already holds an object). Neither is a
 * receipt: the control plane verifies the object (`ObjectStore.verify`) before it records one,
 * and after `exists` that verification decides whether the existing object is the same archive.
 *
 * A PUT that ends in a transport error (`ECONNRESET`, `EPIPE`, `socket hang up`) has an unknown
 * outcome: a server that refuses from the headers (412) may close the connection before reading
 * the rest of the body, and the client then sees a reset instead of the 412 (versitygw beyond
 * 256 KiB). The grant's presigned HEAD then looks at the key: an object there is `exists` (and is
 * verified like any other), no object leaves the error standing, so the upload is tried again.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FsObjectStore } from './fs-store';
import { grantExpired, isTransportError, ObjectVerificationError, UploadGrantRefusedError, type UploadGrant } from './types';

export type UploadOutcome = 'created' | 'exists';

export interface UploadDeps {
  /** The host runner's store for `fs` grants (the directory it shares with the control plane). */
  fsStore?: FsObjectStore;
  /** Clock for the expiry check (tests). */
  now?: () => Date;
}

/** Streams `body` (exactly `grant.length` bytes) to the grant's single object. */
export async function uploadWithGrant(grant: UploadGrant, body: Readable, deps: UploadDeps = {}): Promise<UploadOutcome> {
  if (grantExpired(grant, deps.now?.() ?? new Date())) {
    body.destroy();
    throw new UploadGrantRefusedError(`The upload grant for ${grant.key} expired at ${grant.expiresAt}`);
  }
  if (grant.kind === 'fs') {
    if (!deps.fsStore) throw new Error('An fs upload grant needs the host runner\'s fs object store (OBJECT_STORE_FS_ROOT)');
    return (await deps.fsStore.create(grant.key, body, { contentLength: grant.length, sha256: grant.sha256 })).status;
  }
  let response: IncomingMessage;
  try {
    response = await putStream(grant.url, grant.headers, body, grant.length);
  } catch (err) {
    if (err instanceof ObjectVerificationError || !isTransportError(err) || !grant.headUrl) throw err;
    if (await headStatus(grant.headUrl).catch(() => 0) === 200) return 'exists';
    throw err;
  }
  const text = await readText(response);
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return 'created';
  if (status === 412) return 'exists';
  const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? '';
  if (code === 'BadDigest' || code === 'IncompleteBody') {
    throw new ObjectVerificationError(`Upload of ${grant.key} refused by the store (${code}): the body is not the granted object`);
  }
  if (status === 403) throw new UploadGrantRefusedError(`Upload of ${grant.key} refused by the store (403 ${code || 'Forbidden'})`);
  throw new Error(`Upload of ${grant.key} failed: HTTP ${status} ${code}`.trim());
}

/** A raw PUT streaming `body`; fails when the body is longer or shorter than `length`. */
async function putStream(url: string, headers: Record<string, string>, body: Readable, length: number): Promise<IncomingMessage> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  let seen = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > length) return callback(new ObjectVerificationError(`Upload body is longer than the granted ${length} bytes`));
      callback(null, chunk);
    },
    flush(callback) {
      callback(seen === length ? null : new ObjectVerificationError(`Upload body is ${seen} bytes, not the granted ${length}`));
    },
  });
  return new Promise<IncomingMessage>((resolve, reject) => {
    let answered = false;
    let firstError: Error | undefined;
    // A server may answer (412, 400) and close before the whole body is sent: a response that
    // arrives just after the broken pipe is the outcome. Otherwise the body's own error (a length
    // mismatch) wins over the socket error it causes.
    const fail = (err: unknown): void => {
      const error = err instanceof Error ? err : new Error(String(err));
      if (!firstError || (error instanceof ObjectVerificationError && !(firstError instanceof ObjectVerificationError))) firstError = error;
      setTimeout(() => {
        if (answered) return;
        req.destroy();
        reject(firstError ?? error);
      }, 200);
    };
    const req = send(target, { method: 'PUT', headers }, (response) => {
      answered = true;
      resolve(response);
    });
    req.on('error', fail);
    pipeline(body, meter, req).catch(fail);
  });
}

/** Status of a presigned HEAD (the body, if any, is discarded); rejects on a transport error or after 30 s. */
function headStatus(url: string): Promise<number> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = send(target, { method: 'HEAD', signal: AbortSignal.timeout(30_000) }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

async function readText(response: IncomingMessage): Promise<string> {
  let text = '';
  response.setEncoding('utf8');
  for await (const chunk of response) {
    if (text.length < 64 * 1024) text += chunk as string;
  }
  return text;
}
