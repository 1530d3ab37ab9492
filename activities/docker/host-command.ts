/**
 * Runs a command on the host itself (not in a container): `mount`, `umount`, `mkfs.ext4` for the
 * sandbox disks. Always an argument array, never a shell string, so no path or name is ever
 * interpreted by a shell; a failure names what was being done, the command line and its stderr.
 */
import { execFile } from 'node:child_process';

/** A host command failed (not found, refused, or a non-zero exit). */
export class HostCommandError extends Error {
  constructor(readonly what: string, readonly command: readonly string[], readonly detail: string, readonly exitCode: number | string | null) {
    super(`${what} failed: ${command.join(' ')}: ${detail.replace(/\s+/g, ' ').trim().slice(0, 500) || `exit ${String(exitCode)}`}`);
    this.name = 'HostCommandError';
  }
}

/** Longest a host command may run before it counts as failed. */
const HOST_COMMAND_TIMEOUT_MS = 60_000;

/**
 * Runs `file` with `args` and resolves with its stdout; rejects with a {@link HostCommandError}
 * whose message starts with `what` (e.g. "Mounting the sandbox disk /…/sbx-grp.img").
 */
export function runHostCommand(file: string, args: readonly string[], what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: HOST_COMMAND_TIMEOUT_MS, maxBuffer: 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } }, (err, stdout, stderr) => {
      if (!err) {
        resolve(stdout);
        return;
      }
      const code = (err as NodeJS.ErrnoException & { code?: number | string }).code ?? null;
      reject(new HostCommandError(what, [file, ...args], `${stderr}` || err.message, code));
    });
  });
}
