/**
 * The archive spool held in memory or in a file (activities/docker/sandbox-archive.ts; real Docker,
 * the fs store): an archive within the memory limit is held as the engine's chunks (no file) and
 * uploads the same bytes a file spool does; one above it goes to a file; a memory spool of another
 * length than the grant's is refused as missing; discarding removes either.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { ArchiveSpoolMissingError, discardSpool, spoolArchive, spoolInMemory, uploadSpool } from '../../activities/docker/sandbox-archive';
import { SANDBOX_LABELS } from '../../activities/docker/sandbox-container';
import { FsObjectStore } from '../../lib/object-store';
import { docker, execIn, removeContainers, startTestContainer } from '../support/docker';

describe('archive spool in memory or in a file', function () {
  this.timeout(60_000);
  let container: Docker.Container;
  let target: { containerName: string; containerId: string; generation: number; groupId: string };
  const dir = mkdtempSync(join(tmpdir(), 'spool-test-'));
  const store = new FsObjectStore(join(dir, 'store'));

  before(async () => {
    container = await startTestContainer({ [SANDBOX_LABELS.generation]: '1' });
    const write = await execIn(container, ['bash', '-c', 'mkdir -p /workspace && head -c 3000000 /dev/urandom > /workspace/blob && echo hi > /workspace/note']);
    assert.equal(write.exitCode, 0, write.output);
    await container.stop({ t: 0 });
    const info = await container.inspect();
    target = { containerName: info.Name.replace(/^\//, ''), containerId: info.Id, generation: 1, groupId: 'spool-test' };
  });
  after(async () => {
    await removeContainers();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds an archive within the limit in memory and uploads exactly its bytes; a larger one goes to a file with the same digest', async () => {
    const held = await spoolArchive(docker(), target, join(dir, 'spool'), undefined, 64 * 1024 * 1024);
    assert.equal(held.status, 'spooled');
    if (held.status !== 'spooled') return;
    assert.ok(spoolInMemory(held.path));
    assert.ok(!existsSync(held.path), 'no file for a memory spool');
    const key = 'sandbox-archives/spool-test/g1.tar';
    const grant = await store.grantUpload(key, { length: held.length, sha256: held.sha256 });
    assert.equal(await uploadSpool(grant, held.path, { fsStore: store }), 'created');
    assert.equal((await store.verify(key, { length: held.length, sha256: held.sha256 })).status, 'verified');
    await discardSpool(held.path);
    assert.ok(!spoolInMemory(held.path));

    const filed = await spoolArchive(docker(), target, join(dir, 'spool'), undefined, 1024);
    assert.equal(filed.status, 'spooled');
    if (filed.status !== 'spooled') return;
    assert.ok(!spoolInMemory(filed.path));
    assert.ok(existsSync(filed.path), 'a spool over the memory limit is a file');
    assert.equal(filed.sha256, held.sha256, 'the same bytes either way');
    assert.equal(filed.length, held.length);
    await discardSpool(filed.path);
    assert.ok(!existsSync(filed.path));
  });

  it('refuses a memory spool whose length differs from the grant, and a discarded one, as missing', async () => {
    const held = await spoolArchive(docker(), { ...target, generation: 1 }, join(dir, 'spool'), undefined, 64 * 1024 * 1024);
    assert.equal(held.status, 'spooled');
    if (held.status !== 'spooled') return;
    const other = await store.grantUpload('sandbox-archives/spool-test/other.tar', { length: held.length + 1, sha256: held.sha256 });
    await assert.rejects(uploadSpool(other, held.path, { fsStore: store }), ArchiveSpoolMissingError);
    await discardSpool(held.path);
    const grant = await store.grantUpload('sandbox-archives/spool-test/g1b.tar', { length: held.length, sha256: held.sha256 });
    await assert.rejects(uploadSpool(grant, held.path, { fsStore: store }), ArchiveSpoolMissingError);
  });
});
