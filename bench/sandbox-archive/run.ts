/**
 * `npm run bench:sandbox-archive`: archive and restore of a 200 MiB workspace (docs/sandboxes.md "Archives"), as a
 * ratio to this machine's `tar | sha256sum` floor measured in the same run (issue 17 target:
 * archive ≥ 0.5× the floor's MiB/s). Reports, never asserts, and appends a section to
 * bench/RESULTS.md.
 *
 * - Workspace: 200 files of 1 MiB from /dev/urandom in a stopped `agent-sandbox:base` container
 *   (labelled `agent.bench=sandbox-archive`, removed at the end), the same bytes extracted to a host
 *   directory for the floor.
 * - Floor: `tar -cf - -C <dir> workspace | sha256sum` on that host directory (page cache warm).
 * - Archive: the host runner's path without Temporal or PostgreSQL: spool the joined engine tar
 *   while hashing it, grant a presigned single PUT on a real S3 server on loopback, upload,
 *   verify (the store's full-object checksum). Restore: download while hashing into a spool, check,
 *   and extract into a fresh container with `putArchive`.
 * - `--server versitygw|seaweedfs|both` (or a list, servers.ts; default versitygw, the server of
 *   the tests). With several, all run at once and each round measures every server in turn (the
 *   order rotates by round), so they share the floor and the machine's state.
 * - Rounds alternate floor, then archive and restore per server (3 rounds, `--rounds N`); medians are reported,
 *   with the server's CPU time during upload and verify.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import Docker from 'dockerode';
import { S3ObjectStore } from '../../lib/object-store';
import { restoreArchive, spoolArchive, uploadSpool, DEFAULT_MEMORY_SPOOL_BYTES, discardSpool } from '../../activities/docker/sandbox-archive';
import { serversFromArgs, startArchiveServer, type ArchiveServer } from './servers';

const MIB = 1024 * 1024;
const FILES = 200;
/** `--rounds N` (default 3). */
const ROUNDS = process.argv.includes('--rounds') ? Number(process.argv[process.argv.indexOf('--rounds') + 1]) : 3;
const IMAGE = 'agent-sandbox:base';
const LABEL = { 'agent.bench': 'sandbox-archive' };

const docker = new Docker({ socketPath: process.env.DOCKER_SOCKET_PATH ?? '/var/run/docker.sock' });

async function exec(container: Docker.Container, cmd: string[]): Promise<void> {
  const run = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await run.start({});
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
    stream.resume();
  });
  const info = await run.inspect();
  if (info.ExitCode !== 0) throw new Error(`${cmd.join(' ')} exited ${info.ExitCode}`);
}

async function newContainer(generation: number): Promise<Docker.Container> {
  const container = await docker.createContainer({
    Image: IMAGE, Cmd: ['sleep', 'infinity'], Labels: { ...LABEL, 'agent.generation': String(generation) },
    // Untrusted work's runtime, as a sandbox being archived runs under (BENCH_RUNTIME=runc for the shared kernel).
    HostConfig: { Runtime: process.env.BENCH_RUNTIME ?? 'runsc', NetworkMode: 'none', Init: true },
  });
  await container.start();
  return container;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** User + system CPU seconds of a process so far (its threads included). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { seconds: (performance.now() - started) / 1000, value };
}

async function main(): Promise<void> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error('--rounds takes a positive integer');
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-archive-'));
  const hostCopy = join(dataDir, 'copy');
  const spoolDir = join(dataDir, 'spool');
  const credentials = { accessKeyId: `bench${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') };
  const servers: ArchiveServer[] = [];
  const containers: Docker.Container[] = [];
  try {
    const bucket = 'bench-archives';
    const runs: Array<{ server: ArchiveServer; store: S3ObjectStore; archive: number[]; restore: number[]; serverCpu: number[] }> = [];
    for (const name of serversFromArgs(process.argv)) {
      const server = await startArchiveServer(name, dataDir, credentials);
      servers.push(server);
      const client = new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      client.destroy();
      const store = new S3ObjectStore({ endpoint: server.endpoint, region: 'us-east-1', bucket, forcePathStyle: true, credentials });
      runs.push({ server, store, archive: [], restore: [], serverCpu: [] });
    }

    const source = await newContainer(1);
    containers.push(source);
    await exec(source, ['sh', '-c', `mkdir -p /workspace/data && for i in $(seq 1 ${FILES}); do head -c ${MIB} /dev/urandom > /workspace/data/f$i; done`]);
    await source.stop({ t: 1 });
    const info = await source.inspect();
    execFileSync('mkdir', ['-p', hostCopy]);
    // The same bytes on the host for the floor (docker cp keeps the tree as the engine archives it).
    execFileSync('docker', ['cp', `${info.Id}:/workspace`, hostCopy]);
    const workspaceBytes = Number(execFileSync('du', ['-sb', join(hostCopy, 'workspace')]).toString().split(/\s/)[0]);

    const floor: number[] = [];
    let archiveBytes = 0;
    for (let round = 1; round <= ROUNDS; round += 1) {
      const f = await timed(() => {
        const out = spawnSync('bash', ['-c', `set -o pipefail; tar -cf - -C ${hostCopy} workspace | sha256sum`]);
        if (out.status !== 0) throw new Error(`floor failed: ${out.stderr.toString()}`);
        return Promise.resolve();
      });
      floor.push(f.seconds);
      const line = [`round ${round}: floor ${f.seconds.toFixed(2)} s`];

      for (let i = 0; i < runs.length; i += 1) {
        const { server, store, archive, restore, serverCpu } = runs[(i + round - 1) % runs.length]!;
        const target = { containerName: info.Name.replace(/^\//, ''), containerId: info.Id, generation: 1, groupId: `bench-${server.name}-${round}` };
        let phases = '';
        const a = await timed(async () => {
          const spoolStart = performance.now();
          const spooled = await spoolArchive(docker, target, spoolDir, undefined, DEFAULT_MEMORY_SPOOL_BYTES);
          if (spooled.status !== 'spooled') throw new Error(`spool: ${spooled.status}`);
          const spoolDone = performance.now();
          const key = `sandbox-archives/${target.groupId}/g1.tar`;
          const cpuBefore = cpuSeconds(server.pid);
          const grant = await store.grantUpload(key, { length: spooled.length, sha256: spooled.sha256 });
          await uploadSpool(grant, spooled.path);
          const uploadDone = performance.now();
          const verified = await store.verify(key, { length: spooled.length, sha256: spooled.sha256 });
          serverCpu.push(cpuSeconds(server.pid) - cpuBefore);
          phases = `spool ${((spoolDone - spoolStart) / 1000).toFixed(2)} s, upload ${((uploadDone - spoolDone) / 1000).toFixed(2)} s, verify ${((performance.now() - uploadDone) / 1000).toFixed(2)} s, server CPU ${serverCpu.at(-1)!.toFixed(2)} s`;
          if (verified.status !== 'verified') throw new Error(`verify: ${verified.status}`);
          await discardSpool(spooled.path);
          return { key, length: spooled.length, sha256: spooled.sha256 };
        });
        archive.push(a.seconds);
        archiveBytes = a.value.length;

        const fresh = await newContainer(2);
        containers.push(fresh);
        const freshName = (await fresh.inspect()).Name.replace(/^\//, '');
        const r = await timed(() => restoreArchive(docker, store, freshName, a.value, spoolDir));
        if (!r.value.restored) throw new Error('nothing restored');
        restore.push(r.seconds);
        await fresh.remove({ force: true });
        line.push(`${server.label}: archive ${a.seconds.toFixed(2)} s (${phases}), restore ${r.seconds.toFixed(2)} s`);
      }
      console.log(line.join('; '));
    }
    const mibs = (seconds: number) => workspaceBytes / MIB / seconds;
    const floorRate = mibs(median(floor));
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
    const rows = runs.flatMap(({ server, archive, restore }) => {
      const archiveRate = mibs(median(archive));
      const restoreRate = mibs(median(restore));
      return [
        `| archive (${server.label}): spool+hash, presigned PUT, verify | ${median(archive).toFixed(2)} | ${archiveRate.toFixed(0)} | ${(archiveRate / floorRate).toFixed(2)} | ≥ 0.5 ${archiveRate / floorRate >= 0.5 ? 'PASS' : 'MISS'} |`,
        `| restore (${server.label}): download+hash, putArchive | ${median(restore).toFixed(2)} | ${restoreRate.toFixed(0)} | ${(restoreRate / floorRate).toFixed(2)} | reported |`,
      ];
    });
    const serverNames = runs.map((r) => r.server.label).join('; ');
    const lines = [
      `## ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — sandbox archive and restore (\`npm run bench:sandbox-archive${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`)`,
      '',
      `- Machine: nproc ${cpus().length}, CPU ${cpus()[0]?.model.trim() ?? 'unknown'}; Node ${process.version}; commit ${commit}`,
      `- Workspace ${(workspaceBytes / MIB).toFixed(1)} MiB (${FILES} files of 1 MiB, random bytes) in a stopped container; archive ${(archiveBytes / MIB).toFixed(1)} MiB (uncompressed tar of /workspace, /home, /etc/agent); ${serverNames} on loopback${runs.length > 1 ? ' (each round measures every server in turn, order rotating)' : ''}; ${ROUNDS} alternating rounds, medians.`,
      `- Server CPU during upload and verify, median: ${runs.map((r) => `${r.server.label} ${median(r.serverCpu).toFixed(2)} s`).join(', ')}.`,
      '',
      '| Path | median s | MiB/s | ratio to floor | target |',
      '|------|----------|-------|----------------|--------|',
      `| floor: tar \\| sha256sum | ${median(floor).toFixed(2)} | ${floorRate.toFixed(0)} | 1.00 | — |`,
      ...rows,
      '',
    ];
    console.log(lines.join('\n'));
    appendFileSync(join(__dirname, '..', 'RESULTS.md'), `\n${lines.join('\n')}`);
  } finally {
    await Promise.all(containers.map((c) => c.remove({ force: true }).catch(() => undefined)));
    await Promise.all(servers.map((server) => server.stop(5000)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
