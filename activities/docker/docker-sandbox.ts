/**
 * `SandboxExec` over a retained container: every command runs as the member's fixed UID, in
 * `/workspace` by default. Docker exec has no kill API, so each command runs as the leader of its
 * own session (`setsid`) and records its process group in a per-command pid file; a timeout or an
 * abort kills that whole group from a second exec (as the same UID, so it can touch nothing else).
 */
import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { SandboxDiedError, SandboxFileError, type ExecOptions, type ExecResult, type SandboxExec } from '../agent/types';
import { execInContainer } from './container-exec';
import { memberPaths } from './sandbox-container';

export const WORKSPACE_DIR = '/workspace';

/** How often a running command checks that its container is still alive. */
const DEATH_WATCH_MS = 2000;

/** Exit code of a command killed at its time limit (as coreutils `timeout`). */
export const TIMEOUT_EXIT_CODE = 124;

/** Writes the group id to `$0`, runs the command, removes the pid file and passes its status on. */
// umask 002: what a member writes in /workspace stays writable by the group's other members (forks; docs/sandboxes.md "Forks").
const GROUP_WRAPPER = 'umask 002; echo $$ > "$0"; "$@"; status=$?; rm -f "$0"; exit $status';

/** Exit codes of the member kill (`all`): something was killed and nothing is left; something is left after 2 s. */
const KILLED_SOME = 10;
const KILL_INCOMPLETE = 11;

/**
 * Kills as the member, started as root: `python3 - <uid> all|<pid file>` drops to the member's UID
 * and GID (setuid does not count against the member's process limit; only a new program would),
 * then signals `-1` (every process of the member but itself) or the process group in the pid file
 * (waiting briefly for it: the command may have just started). Started as root because a member
 * at its process limit (a fork bomb under gVisor's RLIMIT_NPROC) cannot start even a `kill`; it
 * still touches nothing of another member or of root.
 */
const KILL_AS_MEMBER = [
  'import os, sys, time',
  'uid, target = int(sys.argv[1]), sys.argv[2]',
  'os.setgroups([]); os.setgid(uid); os.setuid(uid)',
  'def signal(kill, who):',
  '    try: kill(who, 9)',
  '    except (ProcessLookupError, PermissionError): pass',
  'def left():',
  '    me, n = str(os.getpid()), 0',
  "    for p in os.listdir('/proc'):",
  '        if not p.isdigit() or p == me: continue',
  '        try:',
  "            with open('/proc/' + p + '/status') as f: n += any(l.split()[1:2] == [str(uid)] for l in f if l.startswith('Uid:'))",
  '        except OSError: pass',
  '    return n',
  "if target == 'all':",
  '    if left() == 0: sys.exit(0)',
  '    for _ in range(40):',
  '        signal(os.kill, -1)',
  '        time.sleep(0.05)',
  `        if left() == 0: sys.exit(${KILLED_SOME})`,
  `    sys.exit(${KILL_INCOMPLETE})`,
  'for _ in range(50):',
  '    try:',
  '        with open(target) as f: pgid = int(f.read().strip() or 0)',
  '    except (FileNotFoundError, ValueError): pgid = 0',
  '    if pgid > 0: break',
  '    time.sleep(0.1)',
  'if pgid > 0: signal(os.killpg, pgid)',
  'try: os.remove(target)',
  'except OSError: pass',
].join('\n');

/** The root exec that kills as member `uid`: everything of the member (target `all`), or the group in a pid file (its path). */
export function killAsMemberCommand(uid: number, target: string): string[] {
  return ['python3', '-c', KILL_AS_MEMBER, String(uid), target];
}

const READ_FILE = 'if [ ! -f "$0" ]; then exit 3; fi; size=$(stat -c %s "$0") || exit 3; if [ "$size" -gt "$1" ]; then echo "$size"; exit 4; fi; cat "$0"';
const WRITE_FILE = 'umask 002; mkdir -p "$(dirname "$0")" && cat > "$0"';

/** A path inside the container: relative paths are under `/workspace`. */
export function sandboxPath(path: string): string {
  if (path.length === 0 || path.includes('\0')) throw new SandboxFileError('Invalid path');
  return posix.resolve(WORKSPACE_DIR, path);
}

export class DockerSandbox implements SandboxExec {
  private readonly user: string;
  private readonly home: string;

  constructor(private readonly docker: Docker, readonly containerName: string, readonly uid: number) {
    // The UID alone (no `:gid`): the engine then adds the account's supplementary groups, among them the shared workspace group.
    this.user = String(uid);
    this.home = memberPaths(uid).home;
  }

  async exec(command: string[], options: ExecOptions): Promise<ExecResult> {
    if (command.length === 0) throw new Error('exec needs a command');
    const pidFile = `/tmp/agent-exec-${randomUUID()}.pid`;
    let timedOut = false;
    let killing: Promise<void> | undefined;
    let stream: Duplex | undefined;
    const kill = (): void => {
      killing ??= this.killGroup(pidFile, () => stream);
    };
    if (options.signal?.aborted) return { exitCode: 130, stdout: '', stderr: '', truncated: false, timedOut: false };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', kill, { once: true });
    // A sandbox that dies (gVisor ended by the OOM killer) may leave the exec's stream open: watch it.
    const watch = setInterval(() => {
      void this.deathOf().then((died) => {
        if (died) stream?.destroy();
      });
    }, DEATH_WATCH_MS);
    watch.unref();
    try {
      const result = await this.diedOr(() => execInContainer(this.docker, this.containerName, {
        cmd: ['setsid', '-w', 'sh', '-c', GROUP_WRAPPER, pidFile, ...command],
        user: this.user,
        workingDir: options.cwd ?? WORKSPACE_DIR,
        env: { HOME: this.home, USER: memberPaths(this.uid).user, ...options.env },
        ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
        ...(options.openStdin ? { openStdin: options.openStdin } : {}),
        maxOutputBytes: options.maxOutputBytes,
        ...(options.onStdout ? { onStdout: options.onStdout } : {}),
        onStarted: (s) => {
          stream = s;
        },
      }));
      await killing;
      // The waiting setsid reports its killed child; that line is ours, not the command's.
      const stderr = killing ? result.stderr.replace(/^setsid: child \d+ did not exit normally.*\n?/m, '') : result.stderr;
      return { ...result, stderr, exitCode: timedOut ? TIMEOUT_EXIT_CODE : result.exitCode, timedOut };
    } finally {
      clearTimeout(timer);
      clearInterval(watch);
      options.signal?.removeEventListener('abort', kill);
    }
  }

  /**
   * Runs an exec; when it fails, or ends the way a killed process does, and the container is no
   * longer running, the sandbox itself died: `SandboxDiedError` says so instead of a command result.
   */
  private async diedOr<T extends { exitCode: number }>(work: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await work();
    } catch (err) {
      throw (await this.deathOf()) ?? err;
    }
    if (result.exitCode < 0 || result.exitCode >= 128) {
      const died = await this.deathOf();
      if (died) throw died;
    }
    return result;
  }

  /** The container's death, or undefined while it runs (or cannot be inspected). */
  private async deathOf(): Promise<SandboxDiedError | undefined> {
    const info = await this.docker.getContainer(this.containerName).inspect().catch(() => undefined);
    if (!info || info.State.Running) return undefined;
    return new SandboxDiedError(this.containerName, { oomKilled: info.State.OOMKilled, exitCode: info.State.ExitCode, memoryBytes: info.HostConfig.Memory ?? null });
  }

  /** Kills the command's process group; if the engine keeps the stream open, it is closed. */
  private async killGroup(pidFile: string, streamOf: () => Duplex | undefined): Promise<void> {
    try {
      const killed = await execInContainer(this.docker, this.containerName, { cmd: killAsMemberCommand(this.uid, pidFile), user: '0' });
      // Not even a root process could start (a full pids cgroup): every process of the member goes.
      if (killed.exitCode !== 0) await killMemberProcesses(this.docker, this.containerName, this.uid);
    } catch {
      // The container may be gone; closing the stream below still ends the command's wait.
    }
    const timer = setTimeout(() => streamOf()?.destroy(), 10_000);
    timer.unref();
  }

  async readFile(path: string, maxBytes: number): Promise<string> {
    const target = sandboxPath(path);
    const result = await execInContainer(this.docker, this.containerName, {
      cmd: ['sh', '-c', READ_FILE, target, String(maxBytes)],
      user: this.user,
      maxOutputBytes: maxBytes,
    });
    if (result.exitCode === 3) throw new SandboxFileError(`No such file: ${target}`);
    if (result.exitCode === 4) throw new SandboxFileError(`File ${target} is ${result.stdout.trim()} bytes, more than the limit of ${maxBytes}`);
    if (result.exitCode !== 0) throw new SandboxFileError(`Cannot read ${target}: ${result.stderr.trim()}`);
    return result.stdout;
  }

  async writeFile(path: string, content: string): Promise<void> {
    const target = sandboxPath(path);
    const result = await execInContainer(this.docker, this.containerName, {
      cmd: ['sh', '-c', WRITE_FILE, target],
      user: this.user,
      stdin: content,
    });
    if (result.exitCode !== 0) throw new SandboxFileError(`Cannot write ${target}: ${result.stderr.trim()}`);
  }
}

/**
 * Whether the member can start a process again, retried briefly: under gVisor the member's
 * process count (RLIMIT_NPROC) may stay at its limit for a moment after a fork bomb is killed.
 */
async function memberCanStart(docker: Docker, containerName: string, uid: number): Promise<boolean> {
  for (let i = 0; i < 10; i += 1) {
    const probe = await execInContainer(docker, containerName, { cmd: ['true'], user: `${uid}:${uid}` }).catch(() => undefined);
    if (probe?.exitCode === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/**
 * Kills every process of a member (fencing a lost attempt, or one at its process limit): signal
 * `-1` as the member's UID reaches all its processes but the killer itself, and nothing of other
 * members or of root; it is repeated until none is left (a fork bomb forks while it is signalled),
 * and when it killed something the member must be able to start a process again. When not even
 * the kill can start (under runc a full pids cgroup refuses every new process, root's too), when
 * something is left after 2 s, or when the member still cannot start a process, the container is
 * restarted: the member's processes end with it, the workspace stays. Returns how it was done.
 */
export async function killMemberProcesses(docker: Docker, containerName: string, uid: number): Promise<'killed' | 'restarted'> {
  memberPaths(uid);
  const result = await execInContainer(docker, containerName, { cmd: killAsMemberCommand(uid, 'all'), user: '0' }).catch(() => undefined);
  if (result?.exitCode === 0) return 'killed';
  if (result?.exitCode === KILLED_SOME && await memberCanStart(docker, containerName, uid)) return 'killed';
  const info = await docker.getContainer(containerName).inspect();
  if (!info.State.Running) return 'killed';
  await docker.getContainer(containerName).restart({ t: 0 });
  return 'restarted';
}
