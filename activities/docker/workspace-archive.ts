/**
 * Builds the download archive of a sandbox's whole `/workspace` (docs/sandboxes.md "Workspace
 * download"): a gzipped tar streamed from the engine straight into the object store, never held in
 * memory. The size limit is checked before compression: with `du -sb` (apparent size) on a running
 * container, and by counting the uncompressed tar stream on a stopped one (which is not started for
 * this). Entries are named `workspace/…`.
 */
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type Docker from 'dockerode';
import type { ObjectStore } from '../../lib/object-store';
import type { WorkspaceArchiveResult } from '../../workflows/definitions/workspace-archive';
import { execInContainer } from './container-exec';
import { SandboxMissingError } from './sandbox-container';
import { mountSandboxDiskOf } from './sandbox-disk';

export interface WorkspaceArchiveRequest {
  containerName: string;
  /** Object key the archive is stored under. */
  key: string;
  /** Largest workspace accepted, bytes before compression. */
  maxBytes: number;
}

class TooLargeError extends Error {
  constructor(readonly seen: number) {
    super('workspace larger than the download limit');
  }
}

/** Measures, then archives `/workspace` into the store under `key`. */
export async function archiveWorkspace(docker: Docker, store: ObjectStore, request: WorkspaceArchiveRequest): Promise<WorkspaceArchiveResult> {
  const container = docker.getContainer(request.containerName);
  let info: Docker.ContainerInspectInfo;
  try {
    info = await container.inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) throw new SandboxMissingError(request.containerName);
    throw err;
  }
  const running = info.State.Running;
  // A stopped container's workspace is read through its disk's bind: mounted again after a host restart.
  if (!running) await mountSandboxDiskOf(info);
  if (running) {
    const measured = await workspaceSize(docker, request.containerName);
    if (measured > request.maxBytes) return { status: 'too_large', workspaceBytes: measured, maxBytes: request.maxBytes };
  }
  let tarBytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      tarBytes += chunk.length;
      if (!running && tarBytes > request.maxBytes) callback(new TooLargeError(tarBytes));
      else callback(null, chunk);
    },
  });
  const gzip = createGzip();
  const tar = await container.getArchive({ path: '/workspace' });
  const compressing = pipeline(tar, meter, gzip).catch((err: unknown) => {
    gzip.destroy(err as Error);
    throw err;
  });
  try {
    const [stored] = await Promise.all([store.put(request.key, gzip), compressing]);
    return { status: 'stored', key: request.key, ...stored, workspaceBytes: tarBytes };
  } catch (err) {
    await store.delete(request.key).catch(() => undefined);
    if (err instanceof TooLargeError) return { status: 'too_large', workspaceBytes: err.seen, maxBytes: request.maxBytes };
    throw err;
  }
}

/** Apparent size of `/workspace` in bytes. */
async function workspaceSize(docker: Docker, containerName: string): Promise<number> {
  const result = await execInContainer(docker, containerName, { cmd: ['du', '-sb', '/workspace'], user: '0' });
  const bytes = Number(result.stdout.split(/\s/)[0]);
  if (result.exitCode !== 0 || !Number.isFinite(bytes)) throw new Error(`Cannot measure /workspace: ${result.stderr.trim()}`);
  return bytes;
}
