/**
 * Child processes of the benchmark: started pinned to a core with `taskset`, tracked, and all
 * stopped when the runner exits (normally, on an error, or on SIGINT/SIGTERM).
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { request } from 'undici';
import { ownPids } from './cpu';

const children = new Set<ChildProcess>();
let hooksInstalled = false;

function stopAllSync(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
  children.clear();
}

/** Makes sure every child is stopped however the runner ends. Idempotent. */
export function installCleanupHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', stopAllSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping child processes\n`);
      stopAllSync();
      process.exit(130);
    });
  }
}

/** Pins this process (all its threads) to `core`. */
export function pinSelf(core: number): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset failed to pin the runner: ${r.stderr}`);
}

/**
 * Pins every running process named `name` (all threads; e.g. `postgres`, whose new backends fork
 * from the pinned postmaster and inherit it) to `core`, so the gateway's core is not shared with
 * the database the key + request-log rows write to. Their previous affinity is put back when the
 * runner exits, however it exits. Returns how many processes were pinned (0 when none run).
 */
export function pinProcessesNamed(name: string, core: number): number {
  const found = spawnSync('pgrep', ['-x', name], { encoding: 'utf8' });
  const pids = found.status === 0 ? found.stdout.split('\n').filter((line) => /^\d+$/.test(line)) : [];
  const restore: Array<[string, string]> = [];
  for (const pid of pids) {
    const before = /affinity list: (\S+)/.exec(spawnSync('taskset', ['-c', '-p', pid], { encoding: 'utf8' }).stdout);
    if (!before?.[1]) continue;
    if (spawnSync('taskset', ['-a', '-c', '-p', String(core), pid]).status === 0) restore.push([pid, before[1]]);
  }
  if (restore.length > 0) {
    process.on('exit', () => {
      for (const [pid, list] of restore) spawnSync('taskset', ['-a', '-c', '-p', list, pid]);
    });
  }
  return restore.length;
}

export interface Started {
  child: ChildProcess;
  /** Stops the child (SIGTERM, then SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  core: number;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** File receiving stdout+stderr; default: stdout piped (readable by the caller), stderr inherited. */
  logFile?: string;
}

/** Spawns `taskset -c <core> <command> <args>` and tracks it. */
export function startPinned(options: StartOptions): Started {
  let stdio: StdioOptions = ['pipe', 'pipe', 'inherit'];
  let fd: number | undefined;
  if (options.logFile) {
    fd = openSync(options.logFile, 'w'); // the last run's log only: a day of runs appended grew to hundreds of MB
    stdio = ['pipe', fd, fd];
  }
  const child = spawn('taskset', ['-c', String(options.core), options.command, ...options.args], {
    cwd: options.cwd, env: options.env ?? process.env, stdio,
  });
  if (fd !== undefined) closeSync(fd);
  children.add(child);
  if (child.pid !== undefined) ownPids.add(child.pid);
  const pid = child.pid;
  child.once('exit', () => {
    children.delete(child);
    if (pid !== undefined) ownPids.delete(pid);
  });
  return {
    child,
    stop: (graceMs = 3000) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) { resolve(); return; }
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => { clearTimeout(timer); resolve(); });
      child.kill('SIGTERM');
    }),
  };
}

/** Reads the first line a child prints on stdout (within `timeoutMs`). */
export function firstLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const out = child.stdout;
    if (!out) { reject(new Error('child has no stdout pipe')); return; }
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('timed out waiting for the child to print')), timeoutMs);
    const onExit = (code: number | null): void => { clearTimeout(timer); reject(new Error(`child exited early (${code})`)); };
    child.once('exit', onExit);
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => {
      buffer += chunk;
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(buffer.slice(0, nl));
    });
  });
}

/** A port that was free a moment ago on 127.0.0.1. */
export { freeLoopbackPort as freePort } from '../../ops/dev/free-port';

/** Polls `url` with GET until it answers `status` (any status when undefined), within `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs: number, child: ChildProcess, status?: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before ${url} answered`);
    try {
      const res = await request(url, { headersTimeout: 1000, bodyTimeout: 1000 });
      await res.body.dump();
      if (status === undefined || res.statusCode === status) return;
      last = `status ${res.statusCode}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms (${last})`);
}

/** Runs a command to completion (inherit output), resolving with its exit code; bounded by `timeoutMs`. */
export function runCommand(command: string, args: string[], cwd: string, timeoutMs: number, quiet = false): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(command, args, { cwd, stdio: quiet ? 'ignore' : ['ignore', 'inherit', 'inherit'] });
    children.add(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => { clearTimeout(timer); children.delete(child); resolve(code ?? 1); });
    child.once('error', () => { clearTimeout(timer); children.delete(child); resolve(127); });
  });
}
