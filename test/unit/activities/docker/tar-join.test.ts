/**
 * `joinTars` (activities/docker/tar-join.ts) on archives GNU tar writes: the joined stream is one
 * valid tar that GNU tar lists and extracts with every entry of every part (a part's end blocks
 * dropped), a renamed part's entries carry the prefix with a correct header checksum, missing
 * parts are left out, engine chunks of any size are handled, and truncated or long-named renamed
 * parts are refused.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { joinTars, type TarPart } from '../../../../activities/docker/tar-join';

/** A ustar archive of `name` under `dir`, as GNU tar writes it (ends with zero blocks and record padding). */
function tarOf(dir: string, name: string): Buffer {
  return execFileSync('tar', ['--format=ustar', '-cf', '-', '-C', dir, name]);
}

/** The buffer as a stream of chunks of `size` bytes (engines send odd sizes). */
function chunked(buffer: Buffer, size: number): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < buffer.length; i += size) chunks.push(buffer.subarray(i, i + size));
  return Readable.from(chunks);
}

async function joined(parts: Array<TarPart | undefined>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of joinTars(parts.map((p) => () => Promise.resolve(p)))) out.push(Buffer.from(chunk));
  return Buffer.concat(out);
}

describe('joinTars: several engine tars as one archive', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tar-join-'));
    mkdirSync(join(dir, 'workspace/src'), { recursive: true });
    writeFileSync(join(dir, 'workspace/src/a.txt'), 'alpha\n');
    writeFileSync(join(dir, 'workspace/big.bin'), Buffer.alloc(70_001, 3));
    symlinkSync('src/a.txt', join(dir, 'workspace/link'));
    mkdirSync(join(dir, 'home/member-1/.agent'), { recursive: true });
    writeFileSync(join(dir, 'home/member-1/.agent/s.json'), '{}');
    mkdirSync(join(dir, 'agent'));
    writeFileSync(join(dir, 'agent/workspace-base.json'), '{"base":1}');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  for (const size of [1, 511, 512, 4096, 65_536]) {
    it(`joins parts into one tar GNU tar extracts whole, renaming a part (chunks of ${size} bytes)`, async () => {
      const archive = await joined([
        { stream: chunked(tarOf(dir, 'workspace'), size) },
        undefined,
        { stream: chunked(tarOf(dir, 'home'), size) },
        { stream: chunked(tarOf(dir, 'agent'), size), rename: 'etc/' },
      ]);
      assert.equal(archive.length % 512, 0);
      const listed = execFileSync('tar', ['-tf', '-'], { input: archive }).toString().trim().split('\n').sort();
      assert.deepEqual(listed, [
        'etc/agent/', 'etc/agent/workspace-base.json',
        'home/', 'home/member-1/', 'home/member-1/.agent/', 'home/member-1/.agent/s.json',
        'workspace/', 'workspace/big.bin', 'workspace/link', 'workspace/src/', 'workspace/src/a.txt',
      ]);
      const out = mkdtempSync(join(tmpdir(), 'tar-join-out-'));
      try {
        // Without --ignore-zeros: a part's end blocks left in the middle would hide the later parts.
        execFileSync('tar', ['-xf', '-', '-C', out], { input: archive });
        assert.deepEqual(readFileSync(join(out, 'workspace/big.bin')), Buffer.alloc(70_001, 3));
        assert.equal(readFileSync(join(out, 'etc/agent/workspace-base.json'), 'utf8'), '{"base":1}');
        assert.equal(readFileSync(join(out, 'home/member-1/.agent/s.json'), 'utf8'), '{}');
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }

  it('refuses a part that ends inside an entry', async () => {
    const whole = tarOf(dir, 'workspace');
    await assert.rejects(joined([{ stream: chunked(whole.subarray(0, 512 * 3 + 100), 4096) }]), /ended inside an entry/);
  });

  it('refuses to rename a part whose names need more than the ustar name field', async () => {
    const long = 'd'.repeat(95);
    mkdirSync(join(dir, 'agent', long));
    writeFileSync(join(dir, 'agent', long, 'f'), 'x');
    await assert.rejects(joined([{ stream: chunked(tarOf(dir, 'agent'), 4096), rename: 'etc/' }]), /too long to rename/);
  });
});
