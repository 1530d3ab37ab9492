/**
 * A private Temporal dev server for tests that must kill it (never the shared dev server other
 * tests use): `temporal server start-dev` from the installed CLI on a free loopback port, with
 * the project's search attributes and its state in a SQLite file of a temporary directory, so a
 * server killed with SIGKILL and started again on the same file and port has every workflow it had.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { searchAttributes } from '../../workflows/definitions/search-attributes';
import { TEMPORAL_CLI } from './temporal';
import { waitFor } from './wait';

export interface PrivateTemporal {
  /** `127.0.0.1:<port>` of its frontend. */
  address: string;
  /** SIGKILLs the server and waits for its exit. */
  kill9(): Promise<void>;
  /** Starts it again on the same state file and port; resolves once it serves. */
  restart(): Promise<void>;
  /** Kills it and removes its state. */
  stop(): Promise<void>;
}

function serving(address: string): boolean {
  const health = spawnSync(TEMPORAL_CLI, ['operator', 'cluster', 'health', '--address', address], { encoding: 'utf8', timeout: 10_000 });
  return health.stdout?.includes('SERVING') ?? false;
}

export async function startPrivateTemporal(): Promise<PrivateTemporal> {
  const dir = mkdtempSync(join(tmpdir(), 'private-temporal-'));
  const port = await freeLoopbackPort();
  const address = `127.0.0.1:${port}`;
  const args = [
    'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--db-filename', join(dir, 'state.sqlite'), '--log-level', 'error',
    ...Object.values(searchAttributes).flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
  ];
  let child: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    output = '';
    const started = spawn(TEMPORAL_CLI, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    started.stdout.setEncoding('utf8').on('data', (c: string) => { output = (output + c).slice(-4000); });
    started.stderr.setEncoding('utf8').on('data', (c: string) => { output = (output + c).slice(-4000); });
    child = started;
    await waitFor(() => {
      if (started.exitCode !== null) assert.fail(`the private Temporal server exited:\n${output}`);
      return serving(address);
    }, `the private Temporal server on ${address}`, 60_000);
  };
  const kill9 = async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    address,
    kill9,
    restart: start,
    async stop() {
      await kill9();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
