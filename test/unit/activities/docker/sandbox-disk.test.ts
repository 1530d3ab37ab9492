/**
 * The pure parts of a sandbox's disk (activities/docker/sandbox-disk.ts): where a disk lives, how
 * it is formatted and mounted, how a container binds it (and finds it again from its own mounts).
 */
import assert from 'node:assert/strict';
import {
  mkfsArgs, mountArgs, sandboxDiskMounts, sandboxDiskOfMounts, sandboxDiskPaths, SANDBOX_DISK_DIRS,
} from '../../../../activities/docker/sandbox-disk';
import { sandboxContainerOptions } from '../../../../activities/docker/sandbox-container';

const MIB = 1024 * 1024;
const ROOT = '/var/lib/agent/sandbox-disks';

describe('sandbox disk', () => {
  it('lives in one image and one mount point per container under the disk directory, which must be absolute', () => {
    assert.deepEqual(sandboxDiskPaths(ROOT, 'sbx-grp_1'), { image: `${ROOT}/sbx-grp_1.img`, mountPoint: `${ROOT}/sbx-grp_1` });
    assert.throws(() => sandboxDiskPaths('.data/sandbox-disks', 'sbx-grp_1'), /must be absolute/);
  });

  it('is bound at /workspace, /home and /var/tmp with Mounts of type bind (a missing source is an error, never an empty directory)', () => {
    const disk = sandboxDiskPaths(ROOT, 'sbx-grp_1');
    assert.deepEqual(sandboxDiskMounts(disk), [
      { Type: 'bind', Source: `${ROOT}/sbx-grp_1/workspace`, Target: '/workspace', ReadOnly: false },
      { Type: 'bind', Source: `${ROOT}/sbx-grp_1/home`, Target: '/home', ReadOnly: false },
      { Type: 'bind', Source: `${ROOT}/sbx-grp_1/var-tmp`, Target: '/var/tmp', ReadOnly: false },
    ]);
    assert.equal(SANDBOX_DISK_DIRS.find((d) => d.target === '/var/tmp')?.mode, 0o1777, '/var/tmp stays world-writable and sticky');
  });

  it('is found again from a container\'s own mounts, also after the disk directory setting changed; a container made before disks has none', () => {
    const mounts = [
      { Type: 'bind', Source: '/run/agent-relay/abc', Destination: '/run/agent-relay' },
      { Type: 'bind', Source: '/old/root/sbx-grp_1/workspace', Destination: '/workspace' },
    ];
    assert.deepEqual(sandboxDiskOfMounts(mounts), { image: '/old/root/sbx-grp_1.img', mountPoint: '/old/root/sbx-grp_1' });
    assert.equal(sandboxDiskOfMounts([]), undefined);
    assert.equal(sandboxDiskOfMounts(undefined), undefined);
    assert.equal(sandboxDiskOfMounts([{ Type: 'volume', Source: '/var/lib/docker/volumes/x/_data', Destination: '/workspace' }]), undefined);
    assert.equal(sandboxDiskOfMounts([{ Type: 'bind', Source: '/srv/code', Destination: '/workspace' }]), undefined, 'only a disk directory named workspace');
  });

  it('is formatted without a root reserve and with lazy init, and mounted as a loop device without set-uid programs or devices', () => {
    const args = mkfsArgs('/d/sbx-a.img.part');
    assert.deepEqual(args.slice(args.indexOf('-m'), args.indexOf('-m') + 2), ['-m', '0'], 'the whole size is the member\'s: no 5% kept for root');
    assert.match(args.join(' '), /-E lazy_itable_init=1,lazy_journal_init=1,nodiscard/);
    assert.equal(args.at(-1), '/d/sbx-a.img.part');
    const mount = mountArgs({ image: '/d/sbx-a.img', mountPoint: '/d/sbx-a' });
    assert.deepEqual(mount, ['-t', 'ext4', '-o', 'loop,nosuid,nodev,discard,noinit_itable', '/d/sbx-a.img', '/d/sbx-a']);
  });

  it('is part of a group container\'s create options, next to the relay bind', () => {
    const options = sandboxContainerOptions('sbx-grp_1', {
      jobId: 'job_1', groupId: 'grp_1', generation: 1, attemptId: 'att_1', hostId: 'h', uid: 10001, image: 'agent-sandbox:base',
      limits: { memoryBytes: 2048 * MIB, nanoCpus: 1e9, diskBytes: 5 * 1024 * MIB }, runtime: { name: 'runsc', isolating: true }, diskRoot: ROOT,
      relayDir: '/tmp/agent-relay/0123456789abcdef',
    });
    assert.deepEqual(options.HostConfig?.Mounts?.map((m) => m.Target), ['/workspace', '/home', '/var/tmp']);
    assert.deepEqual(options.HostConfig?.Binds, ['/tmp/agent-relay/0123456789abcdef:/run/agent-relay:ro']);
  });
});
