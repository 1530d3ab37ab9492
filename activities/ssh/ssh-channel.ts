/**
 * One SSH session channel of an authenticated connection (ssh-server.ts): records the pty the
 * client asks for, then runs its `shell` or `exec` in the sandbox (sandbox-shell.ts) and copies
 * bytes both ways. When the command ends the channel reports its exit status and closes; when the
 * client goes first, the command's process group is killed.
 */
import type Docker from 'dockerode';
import type { ServerChannel, Session } from 'ssh2';
import type { Logger } from '../../lib/logger';
import { startSandboxShell, type SandboxShell } from './sandbox-shell';

export interface ChannelTarget {
  docker: Docker;
  log: Logger;
  containerName: string;
  uid: number;
  /** The connection's running commands (killed together when the connection ends). */
  shells: Set<SandboxShell>;
  /** A command ended on its own. */
  onCommandEnded(): void;
}

export function serveSession(target: ChannelTarget, session: Session): void {
  let pty: { term: string; cols: number; rows: number } | undefined;
  let shell: SandboxShell | undefined;
  let started = false;
  session.on('pty', (accept, _reject, info) => {
    pty = { term: info.term, cols: info.cols, rows: info.rows };
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    accept?.();
    void shell?.resize(info.cols, info.rows);
  });
  const run = (channel: ServerChannel, command?: string): void => {
    started = true;
    channel.on('error', () => undefined);
    startSandboxShell(target.docker, {
      containerName: target.containerName, uid: target.uid, ...(command === undefined ? {} : { command }), ...(pty ? { pty } : {}),
    }).then((running) => {
      shell = running;
      bridge(target, running, channel);
    }, (err: unknown) => {
      target.log.warn({ err: (err as Error).message, container: target.containerName }, 'ssh command could not start in the sandbox');
      channel.stderr.write('The sandbox could not start the command (is it still running?)\r\n');
      channel.exit(255);
      channel.end();
    });
  };
  session.on('shell', (accept, reject) => (started ? reject?.() : run(accept())));
  session.on('exec', (accept, reject, info) => (started ? reject?.() : run(accept(), info.command)));
}

/** Copies the channel to the exec and back until one side ends. */
function bridge(target: ChannelTarget, shell: SandboxShell, channel: ServerChannel): void {
  target.shells.add(shell);
  let finished = false;
  if (shell.tty) shell.stream.pipe(channel, { end: false });
  else target.docker.modem.demuxStream(shell.stream, channel, channel.stderr);
  // A terminal has no end of input (the user types ^D); closing a pty exec's stdin ends its output too.
  channel.pipe(shell.stream, { end: !shell.tty });
  const finish = (): void => {
    if (finished) return;
    finished = true;
    target.shells.delete(shell);
    void shell.exitCode().then((code) => {
      target.onCommandEnded();
      if (channel.destroyed) return;
      channel.exit(code < 0 ? 255 : code);
      channel.end();
    });
  };
  shell.stream.once('end', finish);
  shell.stream.once('close', finish);
  shell.stream.once('error', finish);
  channel.once('close', () => {
    if (finished) return;
    finished = true;
    target.shells.delete(shell);
    void shell.kill();
  });
}
