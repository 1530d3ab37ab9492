import assert from 'node:assert/strict';
import { demuxDockerLogs } from '../../activities/docker/demux';
import { containerName } from '../../activities/docker/sandbox-command';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('docker log demultiplexing', () => {
  it('splits interleaved stdout and stderr frames', () => {
    const buf = Buffer.concat([frame(1, 'a'), frame(2, 'E1'), frame(1, 'b\n'), frame(2, 'E2')]);
    assert.deepEqual(demuxDockerLogs(buf), { stdout: 'ab\n', stderr: 'E1E2', truncated: false });
  });

  it('caps each stream and flags truncation', () => {
    const buf = Buffer.concat([frame(1, 'x'.repeat(10)), frame(1, 'y'.repeat(10)), frame(2, 'e')]);
    assert.deepEqual(demuxDockerLogs(buf, 15), { stdout: 'x'.repeat(10) + 'y'.repeat(5), stderr: 'e', truncated: true });
  });

  it('keeps a partial trailing frame and ignores a partial header', () => {
    const full = frame(1, 'hello');
    assert.equal(demuxDockerLogs(full.subarray(0, full.length - 2)).stdout, 'hel');
    assert.equal(demuxDockerLogs(full.subarray(0, 5)).stdout, '');
  });

  it('makes Docker-safe container names', () => {
    assert.equal(containerName('cmd', 'host-self-check:Host A:1', '1'), 'cmd-host-self-check-host-a-1-1');
    assert.equal(containerName('--x'), 'x');
  });
});
