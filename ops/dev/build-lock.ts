/**
 * A lock directory (`<dir>.lock`, atomic to create) that serializes a tool's build or download
 * across processes and clones sharing `.tools`; a lock whose owner died is taken over.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../lib/process-alive';
import { BootstrapError } from './sh';

/** Takes `<dir>.lock` (a directory: atomic to create); a lock whose owner died is taken over. `what` names the tool in errors. */
export async function withBuildLock<T>(dir: string, fn: () => T | Promise<T>, what: string): Promise<T> {
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSafe(join(lock, 'pid')));
      const ageMs = Date.now() - statSafeMtime(lock);
      if ((owner && !processAlive(owner)) || (!owner && ageMs > 60_000)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new BootstrapError(what, `build lock ${lock} held by pid ${owner} for 20 minutes`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function statSafeMtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Date.now();
  }
}
