/**
 * Whether a process with `pid` exists (signal 0). A process of another user that we may not
 * signal (EPERM) exists too. Used to adopt files and databases left by processes that are gone.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
