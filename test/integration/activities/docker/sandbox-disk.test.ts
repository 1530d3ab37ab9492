/**
 * A sandbox's disk on the real Docker engine and the host's loop devices (activities/docker/
 * sandbox-disk.ts; docs/execution-profiles.md "Containment"), under the suite's runtime
 * (`AGENT_TEST_RUNTIME`): a member filling `/workspace` past a small quota gets ENOSPC while the
 * host and another sandbox keep their space; `/tmp`, `/dev/shm` and `/run/lock` are bounded; the
 * quota survives a stop and start and a simulated host restart (the disk unmounted); removing the
 * container by any path unmounts and deletes its disk.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSandboxContainer, type SandboxSpec } from '../../../../activities/docker/sandbox-container';
import { DockerSandbox } from '../../../../activities/docker/docker-sandbox';
import { isMountPoint, probeSandboxDisks, SandboxDiskMissingError, sandboxDiskNames, sandboxDiskPaths, type SandboxDisk } from '../../../../activities/docker/sandbox-disk';
import { removeSandboxContainer, sweepSandboxDisks } from '../../../../activities/docker/sandbox-removal';
import { removeExactStoppedContainer } from '../../../../activities/docker/sandbox-lifecycle';
import { listHostContainers, removeOrphanContainer } from '../../../../activities/docker/container-inventory';
import { ArchiveRestoreError, discardSpool, restoreArchive, spoolArchive } from '../../../../activities/docker/sandbox-archive';
import { FsObjectStore } from '../../../../lib/object-store';
import { eventually } from '../../../support/accounts';
import { docker, removeContainers, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRunId, testRuntime } from '../../../support/docker';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const UID = 10001;
const HOST = `disk-host-${testRunId}`;
const run = { timeoutMs: 120_000, maxOutputBytes: 64 * 1024 };

function spec(groupId: string, diskBytes = GIB): SandboxSpec {
  return {
    jobId: 'job_diskdiskdiskdiskdisk', groupId, generation: 1, attemptId: 'att_disk', hostId: HOST, uid: UID, image: SANDBOX_IMAGE,
    diskRoot: TEST_DISK_ROOT, limits: { memoryBytes: 512 * MIB, nanoCpus: 1e9, diskBytes }, runtime: testRuntime(), extraLabels: testLabels(),
  };
}

/** A group container with its disk, and its member's commands. */
async function sandboxFor(groupId: string, diskBytes = GIB): Promise<{ name: string; id: string; sandbox: DockerSandbox; disk: SandboxDisk }> {
  const ensured = await ensureSandboxContainer(docker(), spec(groupId, diskBytes));
  return {
    name: ensured.containerName, id: ensured.containerId,
    sandbox: new DockerSandbox(docker(), ensured.containerName, UID), disk: sandboxDiskPaths(TEST_DISK_ROOT, ensured.containerName),
  };
}

/** Blocks the host really holds for a file (a sparse image holds only what was written). */
const allocated = (path: string): number => statSync(path).blocks * 512;
const hostFree = (): number => {
  const fs = statfsSync(TEST_DISK_ROOT);
  return fs.bavail * fs.bsize;
};
const loopsOf = (image: string): string => execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();

/** The disk is gone from the host: not mounted, no image, no mount point. */
async function assertReleased(disk: SandboxDisk): Promise<void> {
  assert.equal(await isMountPoint(disk.mountPoint), false, 'unmounted');
  assert.equal(existsSync(disk.image), false, 'image deleted');
  assert.equal(existsSync(disk.mountPoint), false, 'mount point removed');
}

describe('sandbox disk (Docker, loop-mounted ext4)', function () {
  this.timeout(240_000);
  let n = 0;
  const group = (label: string) => `grp-${testRunId}-disk-${label}-${(n += 1)}`;

  /** Host-side files of this file's tests (spools, archives, a probe target), removed at the end. */
  const scratch = mkdtempSync(join(tmpdir(), 'sandbox-disk-test-'));

  after(async () => {
    await removeContainers();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('fails a member\'s writes past the quota with ENOSPC, leaves the host and another sandbox their space, and works again once files are removed', async () => {
    const full = await sandboxFor(group('full'));
    const other = await sandboxFor(group('other'));
    const freeBefore = hostFree();
    const fill = await full.sandbox.exec(['dd', 'if=/dev/zero', 'of=/workspace/fill', 'bs=1M', 'count=1400'], run);
    assert.notEqual(fill.exitCode, 0, 'the write past 1 GiB fails');
    assert.match(fill.stderr, /No space left on device/);
    const home = await full.sandbox.exec(['sh', '-c', 'head -c 8388608 /dev/zero > "$HOME/more"'], run);
    assert.match(home.stderr, /No space left on device/, 'the member\'s home is on the same bounded disk');
    const big = await full.sandbox.exec(['fallocate', '-l', '2G', '/workspace/big'], run);
    assert.notEqual(big.exitCode, 0, 'no preallocation past the quota either');

    assert.ok(allocated(full.disk.image) <= GIB, `the image holds at most its size (${allocated(full.disk.image)} bytes)`);
    const [listed] = await docker().listContainers({ all: true, size: true, filters: { id: [full.id] } });
    const layer = (listed as { SizeRw?: number } | undefined)?.SizeRw ?? Number.POSITIVE_INFINITY;
    assert.ok(layer < 64 * MIB, `nothing went to the container's layer (${layer} bytes)`);
    const hostUsed = freeBefore - hostFree();
    assert.ok(hostUsed < GIB + 512 * MIB, `the host lost at most the image (${hostUsed} bytes)`);

    const neighbour = await other.sandbox.exec(['sh', '-c', 'head -c 16777216 /dev/zero > /workspace/ok && stat -c %s /workspace/ok'], run);
    assert.equal(neighbour.exitCode, 0, neighbour.stderr);
    assert.equal(neighbour.stdout.trim(), String(16 * MIB));

    const before = allocated(full.disk.image);
    const retry = await full.sandbox.exec(['sh', '-c', 'rm -f /workspace/fill "$HOME/more" && head -c 16777216 /dev/zero > /workspace/after && sync && stat -c %s /workspace/after'], run);
    assert.equal(retry.exitCode, 0, retry.stderr);
    assert.equal(retry.stdout.trim(), String(16 * MIB));
    // The kernel discards freed blocks after the journal commits (within seconds): the sparse image shrinks.
    await eventually(() => Promise.resolve(allocated(full.disk.image) < before - 512 * MIB), 'space freed in the sandbox is given back to the host (discard)', 30_000);

    const inventory = await listHostContainers(docker(), HOST, { withDisk: true });
    const reported = inventory.find((c) => c.container_id === full.id);
    assert.ok(reported?.disk_bytes !== null && (reported?.disk_bytes ?? 0) >= 16 * MIB, `the inventory counts the workspace (${reported?.disk_bytes})`);
  });

  it('bounds /tmp, /dev/shm and /run/lock, and lets /tmp run programs', async () => {
    const { sandbox } = await sandboxFor(group('tmp'));
    for (const [path, mib] of [['/tmp', 128], ['/dev/shm', 64], ['/run/lock', 8]] as const) {
      const write = await sandbox.exec(['dd', 'if=/dev/zero', `of=${path}/fill`, 'bs=1M', `count=${mib + 32}`], run);
      assert.match(write.stderr, /No space left on device/, `${path} is bounded`);
      const size = await sandbox.exec(['stat', '-c', '%s', `${path}/fill`], run);
      assert.ok(Number(size.stdout) <= mib * MIB, `${path} holds at most ${mib} MiB (${size.stdout.trim()})`);
      await sandbox.exec(['rm', '-f', `${path}/fill`], run);
    }
    const exec = await sandbox.exec(['sh', '-c', 'cp /bin/true /tmp/t && /tmp/t && echo ran'], run);
    assert.equal(exec.stdout.trim(), 'ran', exec.stderr);
  });

  it('keeps the quota and the workspace across a stop and start, and after the host unmounted the disk (a restart)', async () => {
    const groupId = group('restart');
    const first = await sandboxFor(groupId);
    const wrote = await first.sandbox.exec(['sh', '-c', 'echo kept > /workspace/kept.txt && echo mine > "$HOME/session"'], run);
    assert.equal(wrote.exitCode, 0, wrote.stderr);

    await docker().getContainer(first.id).stop({ t: 0 });
    const again = await sandboxFor(groupId);
    assert.equal(again.id, first.id);
    const df = await again.sandbox.exec(['sh', '-c', 'df -B1 --output=size /workspace | tail -1'], run);
    assert.ok(Number(df.stdout) <= GIB && Number(df.stdout) > GIB / 2, `still the 1 GiB disk (${df.stdout.trim()})`);

    await docker().getContainer(first.id).stop({ t: 0 });
    execFileSync('umount', [first.disk.mountPoint]);
    assert.equal(await isMountPoint(first.disk.mountPoint), false);
    // The engine reads a stopped container's workspace (an archive) through the disk, mounted again for it.
    const spooled = await spoolArchive(docker(), { containerName: first.name, containerId: first.id, generation: 1, groupId }, join(scratch, 'spool'));
    assert.equal(spooled.status, 'spooled');
    if (spooled.status === 'spooled') {
      const listing = execFileSync('tar', ['-tf', spooled.path], { encoding: 'utf8' });
      assert.match(listing, /^workspace\/kept\.txt$/m);
      assert.match(listing, /^home\/member-10001\/session$/m);
      await discardSpool(spooled.path);
    }
    execFileSync('umount', [first.disk.mountPoint]);
    const restarted = await sandboxFor(groupId);
    assert.equal(restarted.id, first.id, 'the same container');
    const read = await restarted.sandbox.exec(['sh', '-c', 'cat /workspace/kept.txt "$HOME/session"'], run);
    assert.deepEqual(read.stdout.trim().split('\n'), ['kept', 'mine']);
    const fill = await restarted.sandbox.exec(['dd', 'if=/dev/zero', 'of=/workspace/fill', 'bs=1M', 'count=1400'], run);
    assert.match(fill.stderr, /No space left on device/, 'still bounded after the remount');
    assert.equal(loopsOf(first.disk.image).split('\n').length, 1, 'one loop device: never mounted twice');
  });

  it('refuses to start a container whose disk image is gone (its workspace is lost), without creating an empty one', async () => {
    const groupId = group('lost');
    const lost = await sandboxFor(groupId);
    await docker().getContainer(lost.id).stop({ t: 0 });
    execFileSync('umount', [lost.disk.mountPoint]);
    rmSync(lost.disk.image);
    await assert.rejects(ensureSandboxContainer(docker(), spec(groupId)),
      (err: Error) => err instanceof SandboxDiskMissingError && /its workspace is lost; an operator can delete the sandbox/.test(err.message));
    assert.equal((await docker().getContainer(lost.id).inspect()).State.Running, false, 'not started on an empty directory');
    assert.equal(existsSync(lost.disk.image), false, 'no new image in its place');
  });

  it('unmounts and deletes the disk with the container, on every removal path', async () => {
    const tests = await sandboxFor(group('rm-tests'));
    assert.equal(await removeSandboxContainer(docker(), tests.name.slice(4), TEST_DISK_ROOT), true);
    await assertReleased(tests.disk);

    const lifecycle = await sandboxFor(group('rm-lifecycle'));
    await docker().getContainer(lifecycle.id).stop({ t: 0 });
    assert.deepEqual(await removeExactStoppedContainer(docker(), { containerName: lifecycle.name, containerId: lifecycle.id, generation: 1 }, TEST_DISK_ROOT), { removed: true });
    await assertReleased(lifecycle.disk);

    const orphan = await sandboxFor(group('rm-orphan'));
    assert.equal(await removeOrphanContainer(docker(), HOST, orphan.id, TEST_DISK_ROOT), 'removed');
    await assertReleased(orphan.disk);

    const behindOurBack = await sandboxFor(group('rm-by-hand'));
    await docker().getContainer(behindOurBack.id).remove({ force: true });
    assert.equal(existsSync(behindOurBack.disk.image), true, 'a container removed by hand leaves its disk');
    const kept = await sandboxFor(group('kept'));
    await docker().getContainer(kept.id).stop({ t: 0 });
    const released = await sweepSandboxDisks(docker(), TEST_DISK_ROOT);
    assert.ok(released.includes(behindOurBack.name), 'the sweep releases it');
    await assertReleased(behindOurBack.disk);
    assert.equal(existsSync(kept.disk.image), true, 'the disk of a stopped container is kept');
  });

  it('is probed at a host runner\'s start: a directory that can hold disks passes and keeps nothing, one that cannot fails naming the setting', async () => {
    await probeSandboxDisks(TEST_DISK_ROOT);
    assert.deepEqual((await sandboxDiskNames(TEST_DISK_ROOT)).filter((name) => name.includes('probe')), []);
    const file = join(scratch, 'a-file');
    writeFileSync(file, '');
    await assert.rejects(probeSandboxDisks(join(file, 'disks')), /AGENT_SANDBOX_DISK_DIR=.*cannot hold sandbox disks/);
  });

  it('refuses (for good) to restore an archive larger than the new sandbox\'s disk', async () => {
    const dir = join(scratch, 'restore');
    mkdirSync(join(dir, 'workspace'), { recursive: true });
    writeFileSync(join(dir, 'workspace', 'big'), Buffer.alloc(96 * MIB, 7));
    execFileSync('tar', ['-C', dir, '-cf', join(dir, 'archive.tar'), 'workspace']);
    const bytes = readFileSync(join(dir, 'archive.tar'));
    const store = new FsObjectStore(join(dir, 'store'));
    await store.put('sandbox-archives/x/g1.tar', createReadStream(join(dir, 'archive.tar')));
    const receipt = { key: 'sandbox-archives/x/g1.tar', length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    const small = await sandboxFor(group('restore'), 64 * MIB);
    await assert.rejects(restoreArchive(docker(), store, small.name, receipt, join(dir, 'spool')),
      (err: Error) => err instanceof ArchiveRestoreError && /does not fit the new sandbox's disk/.test(err.message));
  });

  it('gives a container made again for the group a fresh, empty disk', async () => {
    const groupId = group('fresh');
    const first = await sandboxFor(groupId);
    await first.sandbox.exec(['sh', '-c', 'echo old > /workspace/old.txt'], run);
    await docker().getContainer(first.id).remove({ force: true });
    const second = await sandboxFor(groupId, 2 * GIB);
    assert.notEqual(second.id, first.id);
    const listing = await second.sandbox.exec(['sh', '-c', 'ls -A /workspace; df -B1 --output=size /workspace | tail -1'], run);
    const lines = listing.stdout.trim().split('\n');
    assert.deepEqual(lines.slice(0, -1), [], 'nothing of the earlier container');
    assert.ok(Number(lines.at(-1)) > GIB, 'the size the new container\'s limits name');
  });
});
