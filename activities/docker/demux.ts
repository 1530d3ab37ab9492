/**
 * Splits Docker's multiplexed log format (non-TTY containers) into stdout and stderr.
 * Each frame: 1 byte stream (1 stdout, 2 stderr), 3 zero bytes, 4-byte big-endian length, payload.
 * Output beyond `maxBytes` per stream is dropped and flagged; a truncated trailing frame is kept partially.
 */
export interface Demuxed {
  stdout: string;
  stderr: string;
  truncated: boolean;
}

export function demuxDockerLogs(buf: Buffer, maxBytes = 64 * 1024): Demuxed {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let outSize = 0;
  let errSize = 0;
  let truncated = false;
  let offset = 0;
  while (offset + 8 <= buf.length) {
    const stream = buf[offset];
    const length = buf.readUInt32BE(offset + 4);
    const payload = buf.subarray(offset + 8, Math.min(offset + 8 + length, buf.length));
    offset += 8 + length;
    const isErr = stream === 2;
    const used = isErr ? errSize : outSize;
    const room = Math.max(0, maxBytes - used);
    const kept = payload.subarray(0, room);
    if (kept.length < payload.length) truncated = true;
    if (isErr) {
      err.push(kept);
      errSize += kept.length;
    } else {
      out.push(kept);
      outSize += kept.length;
    }
  }
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), truncated };
}
