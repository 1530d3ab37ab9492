/**
 * Small process helpers for the dev bootstrap: run a command, check one exists, wait for a
 * condition with a timeout whose failure names the service and its log file.
 */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');
export const DATA = join(ROOT, '.data');
export const TOOLS = join(ROOT, '.tools');
export const LOGS = join(DATA, 'logs');
export const RUN = join(DATA, 'run');

export const isRoot = process.getuid?.() === 0;

export function say(message: string): void {
  console.log(`[bootstrap] ${message}`);
}

export class BootstrapError extends Error {
  constructor(service: string, problem: string, logFile?: string) {
    super(`${service}: ${problem}${logFile ? `\n  see the log: ${logFile}` : ''}`);
    this.name = 'BootstrapError';
  }
}

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, capturing output. `asRoot` prefixes sudo when not root. */
export function run(command: string, args: string[], options: SpawnSyncOptions & { asRoot?: boolean; asUser?: string } = {}): RunResult {
  let cmd = command;
  let argv = args;
  if (options.asUser && isRoot) {
    argv = ['-u', options.asUser, '--', command, ...args];
    cmd = 'runuser';
  } else if (options.asRoot && !isRoot) {
    argv = [command, ...args];
    cmd = 'sudo';
  }
  const result = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return { status: result.status ?? 1, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? (result.error?.message ?? '')) };
}

/** Runs a command with output going to a log file; throws a BootstrapError naming the log on failure. */
export function runLogged(service: string, command: string, args: string[], logName: string, options: { asRoot?: boolean; env?: NodeJS.ProcessEnv } = {}): void {
  const logFile = join(LOGS, logName);
  const fd = openSync(logFile, 'a');
  try {
    const result = run(command, args, { asRoot: options.asRoot, stdio: ['ignore', fd, fd], env: options.env ?? process.env });
    if (result.status !== 0) throw new BootstrapError(service, `${command} ${args.join(' ')} exited with ${result.status}`, logFile);
  } finally {
    closeSync(fd);
  }
}

/** True when an executable is on PATH. */
export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** Starts a long-running process detached from this one, output appended to its log, pid recorded. */
export function startDetached(service: string, command: string, args: string[], options: { asRoot?: boolean; cwd?: string } = {}): string {
  mkdirSync(RUN, { recursive: true });
  const logFile = join(LOGS, `${service}.log`);
  const fd = openSync(logFile, 'a');
  const [cmd, argv] = options.asRoot && !isRoot ? ['sudo', [command, ...args]] : [command, args];
  const child = spawn(cmd, argv, { detached: true, stdio: ['ignore', fd, fd], cwd: options.cwd ?? ROOT });
  closeSync(fd);
  if (child.pid === undefined) throw new BootstrapError(service, `could not start ${command}`, logFile);
  writeFileSync(join(RUN, `${service}.pid`), String(child.pid));
  child.unref();
  return logFile;
}

/** True when a TCP connection to host:port opens within `timeoutMs`. */
export function tcpOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolvePromise(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Polls `check` until it is true; on timeout throws naming the service and its log. */
export async function waitFor(service: string, check: () => Promise<boolean> | boolean, options: { timeoutMs: number; logFile?: string; what: string }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new BootstrapError(service, `${options.what} not ready after ${Math.round(options.timeoutMs / 1000)} s`, options.logFile);
}
