/**
 * Starting, finding and stopping the cluster's processes. Each runs detached (its own process
 * group: a Ctrl-C in the terminal reaches only `npm run cluster`, which then stops each member
 * once), writes stdout and stderr to `<dir>/<name>.log` and has its pid in `<dir>/<name>.pid`, so
 * any later `npm run cluster -- stop|status|start <name>` finds it without the first command.
 * A pid is trusted only while `/proc/<pid>/cmdline` still names the member's program (a reused
 * pid is never signalled).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { memberLog, memberPidFile, type MemberSpec } from './plan';

/** The running pid of a member, or undefined (no pid file, process gone, or the pid now names another program). */
export function runningPid(dir: string, spec: MemberSpec): number | undefined {
  const file = memberPidFile(dir, spec.name);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    // A zombie (killed, not yet reaped) has an empty command line: not running.
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.includes(spec.args.at(-1)!) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts one member detached; resolves with its pid once it is ready (rejects if it exits first or is late). */
export async function startMember(dir: string, spec: MemberSpec, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<number> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const logFile = memberLog(dir, spec.name);
  const fd = openSync(logFile, 'a');
  const offset = statSync(logFile).size;
  const child = spawn(spec.command, spec.args, { detached: true, stdio: ['ignore', fd, fd], env: { ...env, ...spec.env } });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`${spec.name}: could not start ${spec.command}`);
  writeFileSync(memberPidFile(dir, spec.name), String(child.pid));
  let exit: string | undefined;
  child.once('exit', (code, signal) => { exit = String(signal ?? code); });
  child.unref();
  const deadline = Date.now() + timeoutMs;
  while (exit === undefined) {
    if (await isReady(spec, logFile, offset)) return child.pid;
    if (Date.now() > deadline) throw new Error(`${spec.name} was not ready within ${timeoutMs / 1000} s (${describeReadiness(spec)}); see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${spec.name} exited (${exit}) before it was ready; see ${logFile}`);
}

function describeReadiness(spec: MemberSpec): string {
  return 'health' in spec.ready ? `GET ${spec.ready.health}` : `log line "${spec.ready.logMessage}"`;
}

async function isReady(spec: MemberSpec, logFile: string, offset: number): Promise<boolean> {
  if ('health' in spec.ready) return answers200(spec.ready.health);
  const message = JSON.stringify(spec.ready.logMessage);
  return readFileSync(logFile, 'utf8').slice(offset).includes(`"msg":${message}`);
}

export async function answers200(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Stops these members: SIGTERM to each (they drain), SIGKILL to any still running after
 * `graceMs`; pid files removed. Answers the names that had to be killed.
 */
export async function stopMembers(dir: string, specs: readonly MemberSpec[], graceMs: number): Promise<string[]> {
  const running = specs.flatMap((spec) => {
    const pid = runningPid(dir, spec);
    return pid === undefined ? [] : [{ spec, pid }];
  });
  for (const { pid } of running) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && running.some(({ spec }) => runningPid(dir, spec) !== undefined)) await new Promise((r) => setTimeout(r, 100));
  const killed: string[] = [];
  for (const { spec, pid } of running) {
    if (runningPid(dir, spec) === undefined) continue;
    signal(pid, 'SIGKILL');
    killed.push(spec.name);
  }
  for (const spec of specs) rmSync(memberPidFile(dir, spec.name), { force: true });
  return killed;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}
