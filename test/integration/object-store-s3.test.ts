/**
 * The S3 object store against a real S3-compatible server (versitygw, built and cached by the
 * bootstrap, started by test/support/s3-server.ts with a signing identity): the shared
 * conformance suite, then the presigned PUT as a host runner sends it, in raw HTTP (node fetch):
 * the server itself refuses a wrong checksum (BadDigest), a second PUT (412), an expired or
 * bent grant (403), and verification falls back to reading when the server keeps no checksum.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { HeadBucketCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  isTransportError, ObjectExistsError, openObjectStore, uploadWithGrant, UploadGrantRefusedError, type S3ObjectStore, type UploadGrant,
} from '../../lib/object-store';
import { loadSettings } from '../../lib/settings';
import { objectStoreConformance, sha256Of } from '../support/object-store-conformance';
import { testS3, testS3Store } from '../support/s3-server';

objectStoreConformance({
  name: 's3 (versitygw)',
  async create() {
    const { store, bucket, client } = await testS3Store('conformance');
    return {
      store,
      uploadDeps: {},
      // Same length, other bytes: a plain overwrite with another identity's rights, no checksum.
      corrupt: async (key) => {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: randomBytes(head.ContentLength ?? 0) }));
      },
      close: () => Promise.resolve(client.destroy()),
    };
  },
});

/** A raw PUT of `body` to a presigned URL with the given headers, as curl would send it. */
/**
 * A PUT with exactly these headers through node:http (what a host runner sends), not fetch: the
 * fetch of a process whose global dispatcher another test file replaced refuses a caller's
 * `content-length`.
 */
async function rawPut(grant: Pick<UploadGrant & { kind: 'http-put' }, 'url' | 'headers'>, body: Buffer, headers = grant.headers): Promise<{ status: number; code: string }> {
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest(new URL(grant.url), { method: 'PUT', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; }).on('end', () => resolve({ status: res.statusCode ?? 0, text })).on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  return { status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? '' };
}

function httpGrant(grant: UploadGrant): UploadGrant & { kind: 'http-put' } {
  assert.equal(grant.kind, 'http-put');
  return grant;
}

describe('S3 object store on versitygw: the presigned PUT in raw HTTP', function () {
  this.timeout(60_000);
  let store: S3ObjectStore;
  let bucket: string;

  before(async () => {
    ({ store, bucket } = await testS3Store('presign'));
  });

  it('signs one key with fixed length, full-object SHA-256 and If-None-Match: *, valid 15 minutes', async () => {
    const bytes = randomBytes(1000);
    const grant = httpGrant(await store.grantUpload('archives/g1/a.tar.gz', { length: bytes.length, sha256: sha256Of(bytes) }));
    const url = new URL(grant.url);
    assert.equal(url.pathname, `/${bucket}/archives/g1/a.tar.gz`);
    assert.equal(url.searchParams.get('X-Amz-Expires'), '900');
    const signed = url.searchParams.get('X-Amz-SignedHeaders')?.split(';') ?? [];
    for (const name of ['content-length', 'if-none-match', 'x-amz-checksum-sha256']) assert.ok(signed.includes(name), `${name} in ${signed.join(';')}`);
    assert.equal(grant.headers['content-length'], '1000');
    assert.equal(grant.headers['if-none-match'], '*');
    assert.equal(grant.headers['x-amz-checksum-sha256'], Buffer.from(sha256Of(bytes), 'hex').toString('base64'));
    assert.equal(url.searchParams.get('x-amz-checksum-sha256'), null, 'the checksum is a signed header, not a query parameter');
  });

  it('uploads with a raw PUT; the server keeps the checksum, so verification uses it; a second PUT gets 412', async () => {
    const bytes = randomBytes(70_000);
    const key = 'archives/g2/a.tar.gz';
    const grant = httpGrant(await store.grantUpload(key, { length: bytes.length, sha256: sha256Of(bytes) }));
    assert.equal((await rawPut(grant, bytes)).status, 200);
    assert.deepEqual(await store.verify(key, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'verified', bytes: bytes.length, sha256: sha256Of(bytes), method: 'stored-checksum' });
    assert.deepEqual(await rawPut(grant, bytes), { status: 412, code: 'PreconditionFailed' });
    assert.ok((await buffer(await store.get(key))).equals(bytes));
  });

  it('the server refuses bytes that do not match the signed checksum with BadDigest, and stores nothing', async () => {
    const bytes = randomBytes(5000);
    const key = 'archives/g3/a.tar.gz';
    const grant = httpGrant(await store.grantUpload(key, { length: bytes.length, sha256: sha256Of(bytes) }));
    assert.deepEqual(await rawPut(grant, randomBytes(5000)), { status: 400, code: 'BadDigest' });
    assert.deepEqual(await store.verify(key, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
  });

  it('the grant cannot be bent: another key, a dropped condition or another length is refused', async () => {
    const bytes = randomBytes(3000);
    const key = 'archives/g4/a.tar.gz';
    const grant = httpGrant(await store.grantUpload(key, { length: bytes.length, sha256: sha256Of(bytes) }));
    const otherKey = { ...grant, url: grant.url.replace('/archives/g4/', '/archives/g5/') };
    assert.equal((await rawPut(otherKey, bytes)).status, 403);
    const { 'if-none-match': _dropped, ...unconditional } = grant.headers;
    assert.equal((await rawPut(grant, bytes, unconditional)).status, 403);
    const longer = Buffer.concat([bytes, Buffer.from('x')]);
    const bent = await rawPut(grant, longer, { ...grant.headers, 'content-length': String(longer.length) });
    assert.ok(bent.status >= 400, `a longer body got ${bent.status}`);
    for (const k of [key, 'archives/g5/a.tar.gz']) {
      assert.deepEqual(await store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
    }
  });

  it('the server refuses an expired presigned PUT', async () => {
    const bytes = randomBytes(100);
    const key = 'archives/g6/a.tar.gz';
    const grant = httpGrant(await store.grantUpload(key, { length: bytes.length, sha256: sha256Of(bytes) }, { expiresInSeconds: 1 }));
    await new Promise((r) => setTimeout(r, 2100));
    assert.equal((await rawPut(grant, bytes)).status, 403);
    assert.deepEqual(await store.verify(key, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
  });

  it('without a stored checksum, verification reads and hashes the object', async () => {
    const bytes = randomBytes(9000);
    const key = 'archives/g7/plain.bin';
    await store.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
    const head = await store.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
    assert.equal(head.ChecksumSHA256, undefined, 'this object was stored without a SHA-256');
    assert.deepEqual(await store.verify(key, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'verified', bytes: bytes.length, sha256: sha256Of(bytes), method: 'read' });
    const wrong = await store.verify(key, { length: bytes.length, sha256: sha256Of(randomBytes(9000)) });
    assert.equal(wrong.status === 'mismatch' && wrong.reason, 'sha256');
  });

  it('openObjectStore creates a missing bucket only with S3_CREATE_BUCKET=true', async () => {
    const s3 = await testS3();
    const name = `created-${randomBytes(4).toString('hex')}`;
    const env = {
      OBJECT_STORE_BACKEND: 's3', S3_ENDPOINT: s3.endpoint, S3_BUCKET: name,
      S3_ACCESS_KEY_ID: s3.credentials.accessKeyId, S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    };
    const untouched = await openObjectStore(loadSettings(env)) as S3ObjectStore;
    await assert.rejects(untouched.client.send(new HeadBucketCommand({ Bucket: name })));
    const created = await openObjectStore(loadSettings({ ...env, S3_CREATE_BUCKET: 'true' })) as S3ObjectStore;
    await created.client.send(new HeadBucketCommand({ Bucket: name }));
    const bytes = randomBytes(10);
    assert.deepEqual(await created.put('k', Readable.from([bytes])), { bytes: 10, sha256: sha256Of(bytes) });
    await openObjectStore(loadSettings({ ...env, S3_CREATE_BUCKET: 'true' })); // idempotent
  });
});

describe('S3 object store on versitygw: a 412 that arrives as a connection reset', function () {
  this.timeout(120_000);
  // versitygw refuses a PUT on an existing key from its headers, reads at most 256 KiB of the body
  // and closes the connection: a client still sending sees a reset instead of the 412 (in about
  // half the tries here). The key decides (HEAD), then the object is verified as after a 412.
  const ROUNDS = 10;
  let store: S3ObjectStore;
  let bytes: Buffer;
  let expected: { length: number; sha256: string };
  const key = 'archives/reset/a.tar';

  before(async () => {
    ({ store } = await testS3Store('reset'));
    bytes = randomBytes(8 * 1024 * 1024);
    expected = { length: bytes.length, sha256: sha256Of(bytes) };
    assert.equal(await uploadWithGrant(await store.grantUpload(key, expected), Readable.from([bytes])), 'created');
  });

  it('the same archive again with a fresh grant is exists, and verified, every time', async () => {
    for (let i = 0; i < ROUNDS; i += 1) {
      assert.equal(await uploadWithGrant(await store.grantUpload(key, expected), Readable.from([bytes])), 'exists', `round ${i}`);
      assert.deepEqual(await store.verify(key, expected), { status: 'verified', bytes: bytes.length, sha256: expected.sha256, method: 'stored-checksum' });
    }
  });

  it('other bytes under the same key are exists, then a sha256 mismatch, every time; the object is unchanged', async () => {
    const other = randomBytes(bytes.length);
    const otherExpected = { length: other.length, sha256: sha256Of(other) };
    for (let i = 0; i < ROUNDS; i += 1) {
      assert.equal(await uploadWithGrant(await store.grantUpload(key, otherExpected), Readable.from([other])), 'exists', `round ${i}`);
      const verification = await store.verify(key, otherExpected);
      assert.equal(verification.status === 'mismatch' && verification.reason, 'sha256', `round ${i}: ${JSON.stringify(verification)}`);
    }
    assert.equal((await store.verify(key, expected, { readBack: true })).status, 'verified');
  });

  it('put: the same bytes again succeed, other bytes are ObjectExistsError, every time', async () => {
    const other = randomBytes(bytes.length);
    for (let i = 0; i < ROUNDS; i += 1) {
      assert.deepEqual(await store.put(key, Readable.from([bytes]), { contentLength: bytes.length, sha256: expected.sha256 }), { bytes: bytes.length, sha256: expected.sha256 }, `round ${i}`);
      await assert.rejects(store.put(key, Readable.from([other]), { contentLength: other.length, sha256: sha256Of(other) }), ObjectExistsError, `round ${i}`);
    }
    assert.equal((await store.verify(key, expected, { readBack: true })).status, 'verified');
  });

  it('a reset with no object under the key stays an error (nothing is reported stored)', async () => {
    // A grant bent to another key is refused (403) from the headers: the same early close, and the HEAD finds nothing.
    const fresh = 'archives/reset/never.tar';
    const grant = httpGrant(await store.grantUpload(fresh, expected));
    const bent = { ...grant, url: grant.url.replace('/archives/reset/never.tar', '/archives/reset/bent.tar') };
    for (let i = 0; i < 3; i += 1) {
      await assert.rejects(uploadWithGrant(bent, Readable.from([bytes])), (err: unknown) => isTransportError(err) || err instanceof UploadGrantRefusedError, `round ${i}`);
    }
    assert.deepEqual(await store.verify(fresh, expected), { status: 'missing' });
    assert.deepEqual(await store.verify('archives/reset/bent.tar', expected), { status: 'missing' });
  });
});

describe('S3 object store on versitygw: bytes that rot after the upload', function () {
  this.timeout(60_000);

  it('a read-back verification never reports a corrupted object verified, even when the stored checksum still matches', async () => {
    const { store, s3, bucket } = await testS3Store('rot');
    const bytes = randomBytes(64 * 1024);
    const key = 'archives/rot/a.tar.gz';
    const expected = { length: bytes.length, sha256: sha256Of(bytes) };
    await store.put(key, Readable.from([bytes]), { contentLength: bytes.length, sha256: expected.sha256 });
    flipStoredByte(s3.objectPath(bucket, key), 1000);
    // The HEAD path compares with the checksum recorded at upload, which no longer describes the bytes.
    const headOnly = await store.verify(key, expected);
    assert.equal(headOnly.status === 'verified' && headOnly.method, 'stored-checksum');
    const readBack = await store.verify(key, expected, { readBack: true });
    assert.equal(readBack.status === 'mismatch' && readBack.reason, 'sha256', JSON.stringify(readBack));
  });
});

/** Flips the byte at `offset` of the file where the server keeps an object, in place (its xattrs, the stored checksum, stay). */
function flipStoredByte(path: string, offset: number): void {
  const fd = openSync(path, 'r+');
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, offset);
    writeSync(fd, Buffer.from([byte[0]! ^ 0xff]), 0, 1, offset);
  } finally {
    closeSync(fd);
  }
}
