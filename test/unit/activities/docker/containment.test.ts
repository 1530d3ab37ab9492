/**
 * The places outside a sandbox's disk where a member can write (activities/docker/containment.ts;
 * docs/execution-profiles.md "Containment"): `/tmp` and `/run/lock` are sized tmpfs mounts and
 * `/dev/shm` has a stated size, the same for every container started from the sandbox image.
 */
import assert from 'node:assert/strict';
import { containmentHostConfig, MAX_TMP_BYTES, SHM_BYTES, tmpBytesFor } from '../../../../activities/docker/containment';

const MIB = 1024 * 1024;

describe('tmpfs bounds of the places outside the disk', () => {
  it('sizes /tmp at a quarter of the memory cap, at most 1 GiB, in whole MiB', () => {
    assert.equal(tmpBytesFor(4096 * MIB), MAX_TMP_BYTES);
    assert.equal(tmpBytesFor(1024 * MIB), 256 * MIB);
    assert.equal(tmpBytesFor(1000 * MIB + 3), 250 * MIB);
    assert.equal(tmpBytesFor(2 * MIB), MIB, 'never below 1 MiB');
  });

  it('mounts /tmp (executables allowed) and /run/lock as sized tmpfs and states /dev/shm\'s size', () => {
    const host = containmentHostConfig({ limits: { memoryBytes: 512 * MIB, nanoCpus: 1e9 }, runtime: 'runc', isolating: false });
    assert.deepEqual(host.Tmpfs, {
      '/tmp': `rw,exec,nosuid,nodev,size=${128 * MIB},mode=1777`,
      '/run/lock': `rw,noexec,nosuid,nodev,size=${8 * MIB},mode=1777`,
    });
    assert.equal(host.ShmSize, SHM_BYTES);
    assert.equal(SHM_BYTES, 64 * MIB);
  });
});
