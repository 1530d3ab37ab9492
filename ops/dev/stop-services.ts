/**
 * `npm run stack:stop`: stops the backing services the bootstrap and `npm start` started (Temporal
 * dev server, dockerd, the dev versitygw, the project's PostgreSQL cluster). Services it did not start are left alone.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../lib/process-alive';
import { stopPostgres } from './postgres';
import { stopProcess } from './s3-server';
import { stopDevVersitygw } from './versitygw';
import { RUN, say } from './sh';

function stopByPidFile(service: string): void {
  const file = join(RUN, `${service}.pid`);
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
    say(`stopped ${service} (pid ${pid})`);
  } catch {
    say(`${service} was not running`);
  }
  rmSync(file, { force: true });
}

/** A dev SeaweedFS started before versitygw replaced it (its pid file): SIGTERM, SIGKILL after 10 s. */
async function stopLeftoverSeaweedfs(): Promise<void> {
  const file = join(RUN, 'seaweedfs.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8'));
  if (processAlive(pid)) {
    await stopProcess(pid, 10_000);
    say(`stopped the old dev seaweedfs (pid ${pid})`);
  }
  rmSync(file, { force: true });
}

async function main(): Promise<void> {
  stopByPidFile('temporal');
  stopByPidFile('dockerd');
  await stopDevVersitygw();
  await stopLeftoverSeaweedfs();
  stopPostgres();
  say('backing services stopped');
}

void main();
