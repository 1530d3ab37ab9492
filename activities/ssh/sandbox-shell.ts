/**
 * One SSH channel's shell or command as a `docker exec` in the chat's group container, run the
 * way the agent's own commands run (activities/docker/docker-sandbox.ts): as the chat member's
 * UID and GID, in `/workspace`, with the member's HOME and USER, inside the container's limits,
 * and with no network added. With a pty the exec gets a terminal (raw stream, resizable);
 * without, stdout and stderr stay apart. Docker exec has no kill API, so the command records its
 * process group in a pid file and {@link SandboxShell.kill} kills that group as the member.
 */
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { killAsMemberCommand, WORKSPACE_DIR } from '../docker/docker-sandbox';
import { execInContainer } from '../docker/container-exec';
import { memberPaths } from '../docker/sandbox-container';

/** Records the process group (`$$`: the session leader docker or setsid made) in `$0`, then becomes the command. */
const RECORD_GROUP = 'echo $$ > "$0"; exec "$@"';
/** The member's login shell: bash when the image has it. */
const LOGIN_SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi';

export interface ShellRequest {
  containerName: string;
  uid: number;
  /** The client's command (`ssh host 'cmd'`), run by `sh -c`; absent: a login shell. */
  command?: string;
  /** The pty the client asked for, if any. */
  pty?: { term: string; cols: number; rows: number };
}

export interface SandboxShell {
  /** stdin and, with a pty, the terminal's output; without, the multiplexed stdout/stderr ({@link demux}). */
  stream: Duplex;
  tty: boolean;
  /** Resizes the pty (no-op without one). */
  resize(cols: number, rows: number): Promise<void>;
  /** The exit code once the exec has ended (-1 when unknown). */
  exitCode(): Promise<number>;
  /** Kills the command's process group as the member (the client left first). */
  kill(): Promise<void>;
}

export async function startSandboxShell(docker: Docker, request: ShellRequest): Promise<SandboxShell> {
  const { user, home } = memberPaths(request.uid);
  const pidFile = `/tmp/agent-ssh-${randomUUID()}.pid`;
  const program = request.command === undefined ? ['sh', '-c', LOGIN_SHELL] : ['sh', '-c', request.command];
  const tty = request.pty !== undefined;
  // A terminal's exec is already its session's leader; a plain one becomes one through setsid.
  const cmd = tty ? ['sh', '-c', RECORD_GROUP, pidFile, ...program] : ['setsid', '-w', 'sh', '-c', RECORD_GROUP, pidFile, ...program];
  const env = [`HOME=${home}`, `USER=${user}`, `LOGNAME=${user}`, ...(tty ? [`TERM=${request.pty!.term || 'xterm'}`] : [])];
  const exec = await docker.getContainer(request.containerName).exec({
    Cmd: cmd, User: `${request.uid}:${request.uid}`, WorkingDir: WORKSPACE_DIR, Env: env,
    AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: tty,
  });
  const stream = await exec.start({ hijack: true, stdin: true, Tty: tty });
  const resize = async (cols: number, rows: number): Promise<void> => {
    if (!tty || cols < 1 || rows < 1) return;
    await exec.resize({ w: cols, h: rows }).catch(() => undefined);
  };
  if (tty) await resize(request.pty!.cols, request.pty!.rows);
  return {
    stream, tty, resize,
    exitCode: async () => {
      for (let i = 0; i < 40; i += 1) {
        const info = await exec.inspect().catch(() => undefined);
        if (!info) return -1;
        if (!info.Running && info.ExitCode !== null) return info.ExitCode;
        await new Promise((r) => setTimeout(r, 50));
      }
      return -1;
    },
    kill: async () => {
      await execInContainer(docker, request.containerName, { cmd: killAsMemberCommand(request.uid, pidFile), user: '0' }).catch(() => undefined);
      stream.destroy();
    },
  };
}
