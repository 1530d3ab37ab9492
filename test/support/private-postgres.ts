/**
 * A private, throwaway PostgreSQL cluster for tests that must stop the server (never the shared
 * dev server other tests use): initdb into a temporary directory, started on a free loopback
 * port with the same binaries and helpers as `ops/dev/postgres.ts` (as the `postgres` OS user
 * when running as root), paused and resumed with SIGSTOP/SIGCONT on the postmaster and every
 * backend, killed with SIGKILL like a crashed machine (postmaster and backends) and started
 * again on the same data directory and port (crash recovery runs), and removed afterwards.
 */
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freeLoopbackPort as freePort } from '../../ops/dev/free-port';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pgBin } from '../../ops/dev/postgres';
import { isRoot, run } from '../../ops/dev/sh';

const OWNER = isRoot ? 'postgres' : undefined;

export interface PrivatePostgres {
  /** Superuser URL (trust authentication on loopback). */
  url: string;
  /** SIGSTOPs the postmaster, then each of its children; returns the pids stopped. */
  pause(): number[];
  /** SIGCONTs every process paused (safe to call when nothing is paused). */
  resume(): void;
  /** SIGKILLs the postmaster and every backend (nothing is shut down cleanly); returns the pids killed. */
  kill9(): number[];
  /** Starts the server again on the same data directory and port (after {@link kill9}); waits until it accepts connections. */
  restart(): void;
  /** Resumes, stops the cluster and removes its directory. */
  stop(): void;
}


function idOf(flag: '-u' | '-g', user: string): number {
  return Number(run('id', [flag, user]).stdout.trim());
}

function children(pid: number): number[] {
  return run('pgrep', ['-P', String(pid)]).stdout.split('\n').filter(Boolean).map(Number);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

/** Whether `pid` still runs (a zombie, killed but not yet reaped by its parent, does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Waits (synchronously, at most 10 s) until none of `pids` runs. */
function awaitGone(pids: number[]): void {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 1000 && pids.some(running); i += 1) Atomics.wait(sleeper, 0, 0, 10);
}

/** Creates and starts a cluster; throws with initdb/pg_ctl output when it cannot. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(join(tmpdir(), 'gw-private-pg-'));
  if (OWNER) chownSync(root, idOf('-u', OWNER), idOf('-g', OWNER));
  const data = join(root, 'data');
  const port = await freePort();
  const init = run(pgBin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C'], { asUser: OWNER });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c max_connections=50`;
  const start = (): number => {
    const started = run(pgBin('pg_ctl'), ['-D', data, '-l', join(root, 'postgres.log'), '-o', options, '-w', '-t', '60', 'start'], { asUser: OWNER });
    if (started.status !== 0) throw new Error(`pg_ctl start failed: ${started.stderr || started.stdout}\n${readFileSync(join(root, 'postgres.log'), 'utf8').slice(-2000)}`);
    return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  };
  let postmaster = start();
  const paused = new Set<number>();
  const resume = () => {
    signal(postmaster, 'SIGCONT');
    for (const pid of paused) signal(pid, 'SIGCONT');
    paused.clear();
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    pause: () => {
      signal(postmaster, 'SIGSTOP');
      paused.add(postmaster);
      for (const pid of children(postmaster)) {
        signal(pid, 'SIGSTOP');
        paused.add(pid);
      }
      return [...paused];
    },
    resume,
    kill9: () => {
      resume();
      const killed = [postmaster, ...children(postmaster)];
      for (const pid of killed) signal(pid, 'SIGKILL');
      awaitGone(killed);
      // A killed postmaster not yet reaped still "exists" for the new one's lock-file check: the lock is stale by now.
      for (const lock of [join(data, 'postmaster.pid'), join(root, `.s.PGSQL.${port}.lock`), join(root, `.s.PGSQL.${port}`)]) rmSync(lock, { force: true });
      return killed;
    },
    restart: () => {
      postmaster = start();
    },
    stop: () => {
      resume();
      run(pgBin('pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { asUser: OWNER });
      rmSync(root, { recursive: true, force: true });
    },
  };
}
