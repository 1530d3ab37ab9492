/**
 * Joins the tar streams the Docker engine returns for several paths of one container into a
 * single tar whose entries are named from the filesystem root (`workspace/…`, `home/…`,
 * `etc/agent/…`), so one object holds a sandbox's whole state and one `putArchive` at `/`
 * restores it. Each part's end-of-archive blocks are dropped and one pair ends the result; data
 * blocks pass through as slices of the engine's chunks (no per-block copies).
 *
 * The engine names entries after the last component of the path it archives (`/etc/agent` →
 * `agent/…`); a part with a `rename` prefix has that prefix written into each header's name
 * field (short ustar names only: a part needing long names or PAX headers is refused, which the
 * small root-owned parts renamed here never need).
 */
import type { Readable } from 'node:stream';

const BLOCK = 512;

export interface TarPart {
  stream: Readable;
  /** Written in front of each entry name of this part (`etc/` turns `agent/x` into `etc/agent/x`). */
  rename?: string;
}

/** Entry types whose size field says nothing about data blocks (links, devices, directories, FIFOs). */
const NO_DATA = new Set(['1', '2', '3', '4', '5', '6']);

function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i += 1) if (block[i] !== 0) return false;
  return true;
}

/** The size field: octal text, or base-256 when its first byte has the high bit set. */
function entrySize(header: Buffer): number {
  if ((header[124]! & 0x80) !== 0) {
    let size = 0;
    for (let i = 125; i < 136; i += 1) size = size * 256 + header[i]!;
    return size;
  }
  const text = header.toString('latin1', 124, 136).replace(/\0.*$/s, '').trim();
  const size = text === '' ? 0 : parseInt(text, 8);
  if (!Number.isSafeInteger(size) || size < 0) throw new Error(`Malformed tar header: size field ${JSON.stringify(text)}`);
  return size;
}

function writeChecksum(header: Buffer): void {
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (let i = 0; i < BLOCK; i += 1) sum += header[i]!;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
}

function renamed(header: Buffer, prefix: string): Buffer {
  const type = String.fromCharCode(header[156]!);
  if (type === 'x' || type === 'g' || type === 'L' || type === 'K') throw new Error('A renamed tar part holds long names or PAX headers; refusing to rename it');
  const name = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
  const ustarPrefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
  const next = Buffer.from(prefix + (ustarPrefix ? `${ustarPrefix}/` : '') + name, 'utf8');
  if (next.length > 100) throw new Error(`Tar entry name ${JSON.stringify(next.toString())} is too long to rename`);
  const out = Buffer.from(header);
  out.fill(0, 0, 100);
  next.copy(out, 0);
  out.fill(0, 345, 500);
  writeChecksum(out);
  return out;
}

/** One part's entries without its end-of-archive blocks. */
async function* entriesOf(part: TarPart): AsyncGenerator<Buffer> {
  let header: Buffer = Buffer.alloc(0);
  /** Data bytes (with padding) of the current entry still to pass through. */
  let remaining = 0;
  let ended = false;
  for await (const raw of part.stream) {
    let chunk = raw as Buffer;
    while (chunk.length > 0 && !ended) {
      if (remaining > 0) {
        const take = Math.min(remaining, chunk.length);
        yield chunk.subarray(0, take);
        remaining -= take;
        chunk = chunk.subarray(take);
        continue;
      }
      const need = BLOCK - header.length;
      header = header.length === 0 && chunk.length >= BLOCK ? chunk.subarray(0, BLOCK) : Buffer.concat([header, chunk.subarray(0, need)]);
      chunk = chunk.subarray(Math.min(need, chunk.length));
      if (header.length < BLOCK) continue;
      const block = header;
      header = Buffer.alloc(0);
      if (isZeroBlock(block)) {
        ended = true;
        break;
      }
      const type = String.fromCharCode(block[156]!);
      const size = NO_DATA.has(type) ? 0 : entrySize(block);
      remaining = Math.ceil(size / BLOCK) * BLOCK;
      yield part.rename ? renamed(block, part.rename) : block;
    }
  }
  if (remaining > 0 || header.length > 0) throw new Error('Tar stream ended inside an entry');
}

/** The parts' entries in order, then one end-of-archive marker. A part that opens to `undefined` is left out. */
export async function* joinTars(parts: ReadonlyArray<() => Promise<TarPart | undefined>>): AsyncGenerator<Buffer> {
  for (const open of parts) {
    const part = await open();
    if (!part) continue;
    try {
      yield* entriesOf(part);
    } finally {
      part.stream.destroy();
    }
  }
  yield Buffer.alloc(2 * BLOCK);
}
