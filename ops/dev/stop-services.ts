/**
 * `npm run stack:stop`: stops the backing services the bootstrap and `npm start` started (Temporal
 * dev server, dockerd, the dev SeaweedFS, the project's PostgreSQL cluster). Services it did not start are left alone.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stopPostgres } from './postgres';
import { stopDevSeaweedfs } from './seaweedfs';
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

async function main(): Promise<void> {
  stopByPidFile('temporal');
  stopByPidFile('dockerd');
  await stopDevSeaweedfs();
  stopPostgres();
  say('backing services stopped');
}

void main();
