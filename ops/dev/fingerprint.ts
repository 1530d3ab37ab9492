/** Content fingerprints for `npm start`'s build steps (ops/dev/build-steps.ts). */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A fingerprint of `files` (paths and contents): any added, removed, renamed or edited file changes it. */
export function fingerprint(root: string, files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file).update('\0').update(readFileSync(join(root, file))).update('\0');
  }
  return hash.digest('hex');
}
