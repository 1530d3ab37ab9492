/**
 * The embedded filesystem object store: the shared conformance suite (the same cases as the S3
 * store), then what only a directory has: no partial files left behind, safe keys only, and the
 * factory building each backend from settings.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { writeFile } from 'node:fs/promises';
import { createObjectStore, FsObjectStore, ObjectNotFoundError, ObjectVerificationError, S3ObjectStore } from '../../lib/object-store';
import { loadSettings } from '../../lib/settings';
import { objectStoreConformance } from '../support/object-store-conformance';

objectStoreConformance({
  name: 'fs',
  create() {
    const root = mkdtempSync(join(tmpdir(), 'fs-conformance-'));
    const store = new FsObjectStore(root);
    return Promise.resolve({
      store,
      uploadDeps: { fsStore: store },
      // Same length, other bytes, written in place behind the store's back.
      corrupt: async (key) => {
        const path = join(root, ...key.split('/'));
        const bytes = readFileSync(path);
        bytes[0] = (bytes[0] ?? 0) ^ 0xff;
        await writeFile(path, bytes);
      },
      close: () => Promise.resolve(rmSync(root, { recursive: true, force: true })),
    });
  },
});

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
}

describe('filesystem object store', () => {
  let root: string;
  let store: FsObjectStore;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'fs-store-'));
    store = new FsObjectStore(root);
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('puts, gets and deletes an object, reporting its length and SHA-256', async () => {
    const body = 'archive bytes '.repeat(1000);
    const sha256 = createHash('sha256').update(body).digest('hex');
    const stored = await store.put('archives/job_1/a.tar.gz', Readable.from([Buffer.from(body)]), { contentLength: body.length, sha256 });
    assert.deepEqual(stored, { bytes: body.length, sha256 });
    assert.equal(await text(await store.get('archives/job_1/a.tar.gz')), body);
    await store.delete('archives/job_1/a.tar.gz');
    await assert.rejects(store.get('archives/job_1/a.tar.gz'), ObjectNotFoundError);
    await store.delete('archives/job_1/a.tar.gz');
  });

  it('refuses a body whose length or checksum differs and leaves no object', async () => {
    await assert.rejects(store.put('k/length', Readable.from([Buffer.from('abc')]), { contentLength: 4 }), ObjectVerificationError);
    await assert.rejects(store.put('k/sha', Readable.from([Buffer.from('abc')]), { sha256: '0'.repeat(64) }), ObjectVerificationError);
    await assert.rejects(store.get('k/length'), ObjectNotFoundError);
    assert.deepEqual(allFiles(root), []);
  });

  it('leaves no partial object when the body fails midway', async () => {
    // The source breaks only once the store is reading it (never before it listens for errors).
    let reads = 0;
    const failing = new Readable({
      read() {
        reads += 1;
        if (reads === 1) this.push(Buffer.from('first part'));
        else this.destroy(new Error('source broke'));
      },
    });
    await assert.rejects(store.put('k/broken', failing), /source broke/);
    await assert.rejects(store.get('k/broken'), ObjectNotFoundError);
    assert.deepEqual(allFiles(root), []);
  });

  it('refuses keys that could leave the root', async () => {
    for (const key of ['../escape', 'a/../../b', '/abs', '', 'a//b', 'sp ace']) {
      await assert.rejects(store.put(key, Readable.from([Buffer.from('x')])), /Invalid object key/, key);
    }
  });

  it('the factory builds the store the settings name; s3 needs both keys or neither', () => {
    assert.ok(createObjectStore(loadSettings({ OBJECT_STORE_FS_ROOT: root })) instanceof FsObjectStore);
    const s3 = { OBJECT_STORE_BACKEND: 's3', S3_ENDPOINT: 'http://127.0.0.1:1', S3_BUCKET: 'b' };
    assert.ok(createObjectStore(loadSettings({ ...s3, S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b' })) instanceof S3ObjectStore);
    assert.throws(() => createObjectStore(loadSettings({ ...s3, S3_ACCESS_KEY_ID: 'a' })), /both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/);
  });
});
