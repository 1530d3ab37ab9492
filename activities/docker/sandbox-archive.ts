/**
 * Archive and restore of a whole sandbox group (archive to object store and delete,
 * cold and restoring; docs/sandboxes.md "Archives"). The archive is one uncompressed tar of the
 * container's `/workspace`, `/home` (members' homes with their native sessions) and `/etc/agent`
 * (the workspace base record), entries named from the root, read from the engine of a stopped or
 * dead container (never started for this).
 *
 * Archiving happens in two host steps around the control plane's upload grant:
 * 1. `spoolArchive` streams the joined tar into a spool file on the host while hashing it, so the
 *    grant can fix the exact length and SHA-256 before anything is uploaded (a presigned single
 *    PUT needs both up front) and a retried upload sends the same bytes;
 * 2. `uploadSpool` performs the grant from that file (`uploadWithGrant`).
 * Restoring downloads the object into a spool file while hashing it and extracts it into the new
 * container only when length and SHA-256 equal the committed receipt: what is extracted is
 * exactly what was read and checked.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import {
  MAX_OBJECT_BYTES, uploadWithGrant, type ObjectStore, type StoredObject, type UploadDeps, type UploadGrant, type UploadOutcome,
} from '../../lib/object-store';
import type { ContainerObservation, SandboxArchiveReceipt, SpooledArchive } from '../../workflows/definitions/sandbox-group';
import { observeSandboxContainer, type ExactContainer } from './sandbox-lifecycle';
import { containerDiskUsage, DISK_FULL_BYTES, mountSandboxDiskOf } from './sandbox-disk';
import { extractTarInContainer } from './container-exec';
import { joinTars, type TarPart } from './tar-join';

/** What an archive holds, in extraction order: the base record last, so its presence means the rest was extracted. */
const ARCHIVED_PATHS: ReadonlyArray<{ path: string; rename?: string }> = [
  { path: '/workspace' },
  { path: '/home' },
  { path: '/etc/agent', rename: 'etc/' },
];

/** Where a restore leaves its mark: written after a complete extraction. */
export const WORKSPACE_RECORD = '/etc/agent/workspace-base.json';

/** The archive could not be restored as committed (missing, short, corrupted): retrying cannot help. */
export class ArchiveRestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveRestoreError';
  }
}

/** The spool file of an upload is gone (a host runner restarted with a new spool): spool again. */
export class ArchiveSpoolMissingError extends Error {
  constructor(path: string) {
    super(`The archive spool ${path} is missing or differs from the one granted`);
    this.name = 'ArchiveSpoolMissingError';
  }
}

export function spoolPath(spoolDir: string, groupId: string, generation: number): string {
  return join(spoolDir, `${groupId}.g${generation}.tar`);
}

class TooLarge extends Error {
  constructor(readonly bytes: number) {
    super(`The archive is larger than ${MAX_OBJECT_BYTES} bytes`);
  }
}

/** Bytes and buffers gathered before one `writev` (kept below the kernel's iovec limit). */
const WRITE_BATCH_BYTES = 4 * 1024 * 1024;
const WRITE_BATCH_BUFFERS = 512;

/**
 * Writes `source` to `path` through a temporary file (renamed when complete), hashing it on the
 * way: each chunk is hashed, then written in batches with `writev` (no stream stages between the
 * engine and the file). One batch is written while the next is read: the engine's tar and the
 * disk overlap instead of taking turns. Not fsynced: a spool is a cache of bytes whose length and
 * SHA-256 are known. A spool damaged by a crash fails the upload (length here, SHA-256 at the
 * store) and the archive round starts again.
 */
/**
 * Spools held in memory, by spool path (docs/sandboxes.md "Archives", step 3): an archive of at
 * most the spool's memory limit is kept as the engine's own chunks (no copy), so the upload reads
 * memory instead of writing and reading back a file; on this 2-core class of host the file write
 * was most of the spool's time. A lost one (the runner restarted) is a missing spool, as a lost file is.
 */
const memorySpools = new Map<string, { chunks: Buffer[]; bytes: number }>();
/** The memory limit of one spool a host runner uses unless configured (`AGENT_ARCHIVE_MEMORY_SPOOL_MIB`). */
export const DEFAULT_MEMORY_SPOOL_BYTES = 256 * 1024 * 1024;
/** All memory spools of this process together stay under this; a spool that would pass it goes to a file. */
export const MEMORY_SPOOLS_TOTAL_BYTES = 1024 * 1024 * 1024;
let memorySpoolBytes = 0;

async function writeSpool(source: AsyncIterable<Buffer>, path: string, limit: number, memoryBytes = 0): Promise<StoredObject & { inMemory: boolean }> {
  const temp = `${path}.${process.pid}.${Date.now()}.part`;
  const hash = createHash('sha256');
  let bytes = 0;
  let held: Buffer[] | undefined = memoryBytes > 0 ? [] : undefined;
  let handle: FileHandle | undefined;
  /** The batch being written, if any; its failure is raised at the next batch or at the end. */
  let writing: Promise<unknown> = Promise.resolve();
  try {
    let batch: Buffer[] = [];
    let batchBytes = 0;
    for await (const chunk of source) {
      bytes += chunk.length;
      if (bytes > limit) throw new TooLarge(bytes);
      hash.update(chunk);
      if (held) {
        if (bytes <= memoryBytes && memorySpoolBytes + bytes <= MEMORY_SPOOLS_TOTAL_BYTES) {
          held.push(chunk);
          continue;
        }
        // Too large for memory: what is held becomes the first batch of the file.
        batch = held;
        batchBytes = bytes - chunk.length;
        held = undefined;
      }
      handle ??= await open(temp, 'wx');
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= WRITE_BATCH_BYTES || batch.length >= WRITE_BATCH_BUFFERS) {
        await writing;
        writing = handle.writev(batch);
        batch = [];
        batchBytes = 0;
      }
    }
    if (held) {
      await rm(path, { force: true }); // a file of an earlier round at this path is stale
      memorySpools.set(path, { chunks: held, bytes });
      memorySpoolBytes += bytes;
      return { bytes, sha256: hash.digest('hex'), inMemory: true };
    }
    handle ??= await open(temp, 'wx');
    await writing;
    if (batch.length > 0) await handle.writev(batch);
    await handle.close();
    await rename(temp, path);
    return { bytes, sha256: hash.digest('hex'), inMemory: false };
  } catch (err) {
    await writing.catch(() => undefined);
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw err;
  }
}

/**
 * Spools the archive of the exact stopped or dead container. Answers `not_stopped` (with what the
 * host sees) for anything else, and `too_large` above the single-upload limit (nothing kept).
 */
export async function spoolArchive(
  docker: Docker, target: ExactContainer & { groupId: string }, spoolDir: string, limit: number = MAX_OBJECT_BYTES, memoryBytes = 0,
): Promise<SpooledArchive | { status: 'not_stopped'; observation: ContainerObservation } | { status: 'too_large'; bytes: number; limit: number }> {
  const seen = await observeSandboxContainer(docker, target);
  if (!((seen.condition === 'stopped' || seen.condition === 'dead') && seen.containerId === target.containerId)) {
    return { status: 'not_stopped', observation: seen };
  }
  await mkdir(spoolDir, { recursive: true });
  const path = spoolPath(spoolDir, target.groupId, target.generation);
  // By id: the engine reads the stopped container's filesystem; nothing runs in it.
  const container = docker.getContainer(target.containerId);
  // `/workspace` and `/home` are binds of the sandbox's disk: mounted again after a host restart.
  await mountSandboxDiskOf(await container.inspect());
  // A path the container does not have (no base record: an initialization that never finished) is left out.
  const parts = ARCHIVED_PATHS.map(({ path: inside, rename: prefix }) => async (): Promise<TarPart | undefined> => {
    let stream: Readable;
    try {
      stream = await container.getArchive({ path: inside }) as unknown as Readable;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
    return { stream, ...(prefix ? { rename: prefix } : {}) };
  });
  try {
    discardMemorySpool(path); // an earlier round's
    const stored = await writeSpool(joinTars(parts), path, limit, memoryBytes);
    return { status: 'spooled', path, length: stored.bytes, sha256: stored.sha256 };
  } catch (err) {
    if (err instanceof TooLarge) return { status: 'too_large', bytes: err.bytes, limit };
    throw err;
  }
}

/** Uploads a spooled archive with its grant; the spool must still be the granted bytes (length checked here, SHA-256 by the store). */
export async function uploadSpool(grant: UploadGrant, path: string, deps: UploadDeps = {}): Promise<UploadOutcome> {
  const held = memorySpools.get(path);
  if (held) {
    if (held.bytes !== grant.length) throw new ArchiveSpoolMissingError(path);
    return uploadWithGrant(grant, Readable.from(held.chunks, { objectMode: false }), deps);
  }
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    throw new ArchiveSpoolMissingError(path);
  }
  if (size !== grant.length) throw new ArchiveSpoolMissingError(path);
  return uploadWithGrant(grant, createReadStream(path, { highWaterMark: 1024 * 1024 }), deps);
}

export async function discardSpool(path: string): Promise<void> {
  discardMemorySpool(path);
  await rm(path, { force: true });
}

function discardMemorySpool(path: string): void {
  const held = memorySpools.get(path);
  if (!held) return;
  memorySpools.delete(path);
  memorySpoolBytes -= held.bytes;
}

/** Whether the spool at `path` is held in memory (tests and the bench). */
export function spoolInMemory(path: string): boolean {
  return memorySpools.has(path);
}

/** Whether a restore into this container already completed (its base record is there). */
async function restoredAlready(docker: Docker, containerName: string): Promise<boolean> {
  try {
    await docker.getContainer(containerName).infoArchive({ path: WORKSPACE_RECORD });
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/**
 * Restores `receipt` into the running container `containerName`: downloads the object into a
 * spool file while hashing it, refuses (`ArchiveRestoreError`) unless length and SHA-256 equal the
 * receipt, then extracts that file at `/`. Idempotent: a container whose base record exists was
 * restored already (the record is extracted last). An archive larger than the container's disk
 * is an `ArchiveRestoreError` too.
 */
export async function restoreArchive(
  docker: Docker, store: ObjectStore, containerName: string, receipt: SandboxArchiveReceipt, spoolDir: string,
): Promise<{ restored: boolean }> {
  if (await restoredAlready(docker, containerName)) return { restored: false };
  await mkdir(spoolDir, { recursive: true });
  const path = join(spoolDir, `restore-${containerName}-${Date.now()}.tar`);
  let body: Readable;
  try {
    body = await store.get(receipt.key);
  } catch (err) {
    if ((err as Error).name === 'ObjectNotFound') throw new ArchiveRestoreError(`The archive ${receipt.key} is missing from the object store`);
    throw err;
  }
  try {
    const read = await writeSpool(body as AsyncIterable<Buffer>, path, receipt.length).catch((err: unknown) => {
      if (err instanceof TooLarge) throw new ArchiveRestoreError(`The archive ${receipt.key} is longer than its receipt's ${receipt.length} bytes`);
      throw err;
    });
    if (read.bytes !== receipt.length) throw new ArchiveRestoreError(`The archive ${receipt.key} is ${read.bytes} bytes, not the receipt's ${receipt.length}`);
    if (read.sha256 !== receipt.sha256) throw new ArchiveRestoreError(`The archive ${receipt.key} does not have the receipt's SHA-256`);
    await extractTarInContainer(docker, containerName, createReadStream(path, { highWaterMark: 1024 * 1024 }), { dir: '/', length: receipt.length }).catch(async (err: unknown) => {
      // Retrying cannot make it fit: the container (and its disk) is removed and the group stays cold.
      const free = (await containerDiskUsage(docker, containerName))?.freeBytes;
      if (free !== undefined && free < DISK_FULL_BYTES) {
        throw new ArchiveRestoreError(`The archive ${receipt.key} (${receipt.length} bytes) does not fit the new sandbox's disk; an operator can raise the host setting container_disk_gib`);
      }
      throw err;
    });
    return { restored: true };
  } finally {
    await rm(path, { force: true });
  }
}
