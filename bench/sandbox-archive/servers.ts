/**
 * The S3 servers the archive bench and `s3-check.ts` can run against, each started on loopback
 * with a fresh data directory and one signing identity:
 * - `versitygw` (the default, and the server of the tests and the dev stack): `versitygw posix`
 *   with `--data-integrity-etag` (ETags from the checksum we send: no MD5 pass over the body; our
 *   contract never reads an ETag);
 * - `seaweedfs`: `weed server -s3` (ops/dev/seaweedfs.ts), for comparison; built on first use
 *   (about 4.5 minutes), since nothing else needs it any more;
 * - `versitygw-md5`: the same with its default MD5 ETags.
 */
import { join } from 'node:path';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import type { S3Credentials } from '../../ops/dev/s3-server';
import { ensureSeaweedfsBinary, freeSeaweedfsPorts, startSeaweedfs } from '../../ops/dev/seaweedfs';
import { ensureVersitygwBinary, startVersitygw, VERSITYGW_VERSION } from '../../ops/dev/versitygw';

export const ARCHIVE_SERVERS = ['seaweedfs', 'versitygw', 'versitygw-md5'] as const;
export type ArchiveServerName = (typeof ARCHIVE_SERVERS)[number];

export interface ArchiveServer {
  name: ArchiveServerName;
  /** How RESULTS.md names it. */
  label: string;
  endpoint: string;
  pid: number;
  stop(deadlineMs?: number): Promise<void>;
}

/** `--server a,b` (or `both`: seaweedfs,versitygw); default versitygw. */
export function serversFromArgs(argv: string[]): ArchiveServerName[] {
  const at = argv.indexOf('--server');
  const value = at >= 0 ? argv[at + 1] ?? '' : 'versitygw';
  const names = value === 'both' ? ['seaweedfs', 'versitygw'] : value.split(',');
  for (const name of names) {
    if (!(ARCHIVE_SERVERS as readonly string[]).includes(name)) throw new Error(`--server ${value}: expected both or a list of ${ARCHIVE_SERVERS.join(', ')}`);
  }
  return names as ArchiveServerName[];
}

export async function startArchiveServer(name: ArchiveServerName, dataDir: string, credentials: S3Credentials): Promise<ArchiveServer> {
  if (name === 'seaweedfs') {
    const server = await startSeaweedfs({ binary: await ensureSeaweedfsBinary(), dataDir: join(dataDir, 'weed'), credentials, ports: await freeSeaweedfsPorts() });
    return { name, label: 'SeaweedFS', endpoint: server.endpoint, pid: server.pid, stop: (ms) => server.stop(ms) };
  }
  const checksumEtag = name === 'versitygw';
  const server = await startVersitygw({
    binary: await ensureVersitygwBinary(), dataDir: join(dataDir, name), credentials, port: await freeLoopbackPort(), checksumEtag,
  });
  const label = `versitygw ${VERSITYGW_VERSION}${checksumEtag ? '' : ', MD5 ETags'}`;
  return { name, label, endpoint: server.endpoint, pid: server.pid, stop: (ms) => server.stop(ms) };
}
