/**
 * The object-store contract (lib/object-store/types.ts, docs/object-store.md) as one suite that
 * every implementation runs with the same cases: whole objects by key, write-once keys
 * (put-if-absent, and a repeat of the same bytes verified then accepted), verification by length
 * and SHA-256 that a corrupted object never passes, and upload grants (one key, fixed length and
 * checksum, expiry, 5 GiB).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import {
  MAX_OBJECT_BYTES, ObjectExistsError, ObjectNotFoundError, ObjectTooLargeError, ObjectVerificationError, UploadGrantRefusedError,
  uploadWithGrant, type ObjectStore, type UploadDeps,
} from '../../lib/object-store';

export interface ConformanceHarness {
  store: ObjectStore;
  /** What `uploadWithGrant` needs on a host runner of this backend. */
  uploadDeps: UploadDeps;
  /** Replaces the stored bytes of `key` behind the store's back (same length, other content). */
  corrupt(key: string): Promise<void>;
  close?(): Promise<void>;
}

export interface ConformanceTarget {
  name: string;
  create(): Promise<ConformanceHarness>;
}

export function sha256Of(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function body(bytes: Buffer): Readable {
  return Readable.from([bytes]);
}

/** A stream that fails the test if anything reads it (refusals must come before the upload). */
function unreadable(): Readable {
  return new Readable({
    read() {
      this.destroy(new Error('the body was read, but the refusal should have come first'));
    },
  });
}

let counter = 0;
function key(prefix: string): string {
  counter += 1;
  return `conformance/${prefix}/${process.pid}-${counter}-${randomBytes(3).toString('hex')}.bin`;
}

export function objectStoreConformance(target: ConformanceTarget): void {
  describe(`object store conformance: ${target.name}`, function () {
    this.timeout(60_000);
    let h: ConformanceHarness;

    before(async () => {
      h = await target.create();
    });

    after(async () => {
      await h?.close?.();
    });

    it('puts, gets and deletes an object, reporting its length and SHA-256', async () => {
      const bytes = randomBytes(10_000);
      const k = key('basic');
      assert.deepEqual(await h.store.put(k, body(bytes), { contentLength: bytes.length, sha256: sha256Of(bytes) }), { bytes: bytes.length, sha256: sha256Of(bytes) });
      assert.ok((await buffer(await h.store.get(k))).equals(bytes));
      await h.store.delete(k);
      await assert.rejects(h.store.get(k), ObjectNotFoundError);
      await h.store.delete(k); // deleting a missing object is not an error
    });

    it('a put of unknown length and checksum measures them', async () => {
      const bytes = randomBytes(4321);
      const k = key('unknown');
      assert.deepEqual(await h.store.put(k, body(bytes)), { bytes: bytes.length, sha256: sha256Of(bytes) });
      assert.equal((await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) })).status, 'verified');
    });

    it('refuses a body whose length or SHA-256 differs from the stated one, leaving no object', async () => {
      const bytes = randomBytes(2048);
      const k = key('refused');
      await assert.rejects(h.store.put(k, body(bytes), { contentLength: bytes.length, sha256: sha256Of(randomBytes(2048)) }), ObjectVerificationError);
      await assert.rejects(h.store.put(k, body(bytes), { contentLength: bytes.length + 1 }), ObjectVerificationError);
      assert.deepEqual(await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
    });

    it('is write-once: the same bytes again are verified and accepted, other bytes are refused and change nothing', async () => {
      const bytes = randomBytes(5000);
      const k = key('once');
      const opts = { contentLength: bytes.length, sha256: sha256Of(bytes) };
      await h.store.put(k, body(bytes), opts);
      assert.deepEqual(await h.store.put(k, body(bytes), opts), { bytes: bytes.length, sha256: sha256Of(bytes) });
      const other = randomBytes(5000);
      await assert.rejects(h.store.put(k, body(other), { contentLength: other.length, sha256: sha256Of(other) }), ObjectExistsError);
      assert.ok((await buffer(await h.store.get(k))).equals(bytes));
    });

    it('verifies length and SHA-256, and says which failed or that the object is missing', async () => {
      const bytes = randomBytes(3000);
      const k = key('verify');
      await h.store.put(k, body(bytes));
      const good = await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) });
      assert.equal(good.status, 'verified');
      assert.equal(good.status === 'verified' && good.sha256, sha256Of(bytes));
      const read = await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) }, { readBack: true });
      assert.deepEqual(read, { status: 'verified', bytes: bytes.length, sha256: sha256Of(bytes), method: 'read' });
      const shortBy = await h.store.verify(k, { length: bytes.length - 1, sha256: sha256Of(bytes) });
      assert.equal(shortBy.status === 'mismatch' && shortBy.reason, 'length');
      const wrongHash = await h.store.verify(k, { length: bytes.length, sha256: sha256Of(randomBytes(3000)) });
      assert.equal(wrongHash.status === 'mismatch' && wrongHash.reason, 'sha256');
      assert.deepEqual(await h.store.verify(key('absent'), { length: 1, sha256: sha256Of(Buffer.from('x')) }), { status: 'missing' });
    });

    it('never reports a corrupted object verified', async () => {
      const bytes = randomBytes(4096);
      const k = key('corrupt');
      await h.store.put(k, body(bytes));
      await h.corrupt(k);
      const expected = { length: bytes.length, sha256: sha256Of(bytes) };
      for (const opts of [{}, { readBack: true }]) {
        const result = await h.store.verify(k, expected, opts);
        assert.equal(result.status, 'mismatch', JSON.stringify({ opts, result }));
      }
    });

    it('an upload grant writes exactly the granted object; a second upload finds it existing', async () => {
      const bytes = randomBytes(6000);
      const k = key('grant');
      const expected = { length: bytes.length, sha256: sha256Of(bytes) };
      const grant = await h.store.grantUpload(k, expected);
      const lifetime = Date.parse(grant.expiresAt) - Date.now();
      assert.ok(lifetime > 14 * 60_000 && lifetime <= 15 * 60_000, `grant lifetime ${lifetime} ms`);
      assert.equal(await uploadWithGrant(grant, body(bytes), h.uploadDeps), 'created');
      assert.equal((await h.store.verify(k, expected)).status, 'verified');
      assert.equal(await uploadWithGrant(grant, body(bytes), h.uploadDeps), 'exists');
      // An "exists" is a receipt only after verification: a different object under the key fails it.
      const other = randomBytes(6000);
      const otherGrant = await h.store.grantUpload(k, { length: other.length, sha256: sha256Of(other) });
      assert.equal(await uploadWithGrant(otherGrant, body(other), h.uploadDeps), 'exists');
      assert.equal((await h.store.verify(k, { length: other.length, sha256: sha256Of(other) })).status, 'mismatch');
      assert.ok((await buffer(await h.store.get(k))).equals(bytes));
    });

    it('an upload whose bytes differ from the granted checksum or length is refused and stores nothing', async () => {
      const bytes = randomBytes(2500);
      const k = key('baddigest');
      const grant = await h.store.grantUpload(k, { length: bytes.length, sha256: sha256Of(bytes) });
      await assert.rejects(uploadWithGrant(grant, body(randomBytes(2500)), h.uploadDeps), ObjectVerificationError);
      await assert.rejects(uploadWithGrant(grant, body(bytes.subarray(0, 2000)), h.uploadDeps), ObjectVerificationError);
      assert.deepEqual(await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
      assert.equal(await uploadWithGrant(grant, body(bytes), h.uploadDeps), 'created');
    });

    it('an expired grant is refused', async () => {
      const bytes = randomBytes(100);
      const k = key('expired');
      const grant = await h.store.grantUpload(k, { length: bytes.length, sha256: sha256Of(bytes) }, { expiresInSeconds: 1 });
      await new Promise((r) => setTimeout(r, 1500));
      await assert.rejects(uploadWithGrant(grant, body(bytes), h.uploadDeps), UploadGrantRefusedError);
      assert.deepEqual(await h.store.verify(k, { length: bytes.length, sha256: sha256Of(bytes) }), { status: 'missing' });
    });

    it('refuses objects above 5 GiB before uploading anything', async () => {
      const k = key('huge');
      const huge = { length: MAX_OBJECT_BYTES + 1, sha256: sha256Of(Buffer.from('')) };
      await assert.rejects(h.store.grantUpload(k, huge), ObjectTooLargeError);
      await assert.rejects(h.store.put(k, unreadable(), { contentLength: MAX_OBJECT_BYTES + 1 }), ObjectTooLargeError);
      const atLimit = await h.store.grantUpload(k, { length: MAX_OBJECT_BYTES, sha256: huge.sha256 });
      assert.equal(atLimit.length, MAX_OBJECT_BYTES);
    });

    it('round-trips a few MiB through a grant and through put', async () => {
      const bytes = randomBytes(5 * 1024 * 1024 + 123);
      const expected = { length: bytes.length, sha256: sha256Of(bytes) };
      const viaGrant = key('mib');
      const grant = await h.store.grantUpload(viaGrant, expected);
      assert.equal(await uploadWithGrant(grant, Readable.from(chunks(bytes, 64 * 1024)), h.uploadDeps), 'created');
      assert.ok((await buffer(await h.store.get(viaGrant))).equals(bytes));
      const viaPut = key('mib');
      assert.deepEqual(await h.store.put(viaPut, Readable.from(chunks(bytes, 100_000))), { bytes: bytes.length, sha256: expected.sha256 });
      assert.deepEqual(await h.store.verify(viaPut, expected, { readBack: true }), { status: 'verified', bytes: bytes.length, sha256: expected.sha256, method: 'read' });
    });
  });
}

function* chunks(bytes: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}
