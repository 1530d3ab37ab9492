/**
 * The SSH server's host key: one Ed25519 key generated at the runner's first start and kept at
 * `AGENT_SSH_HOST_KEY_PATH` (mode 0600), so owners' `known_hosts` entries stay valid across
 * restarts (docs/ssh.md "Settings").
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { utils } from 'ssh2';

/** The private key at `path` (OpenSSH form), written first when missing; its public fingerprint is logged by the caller. */
export async function loadOrCreateHostKey(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  try {
    // `wx`: a second runner starting at the same moment keeps the first one's key.
    await writeFile(path, generateEd25519(), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return readFile(path, 'utf8');
}

/**
 * A new Ed25519 private key in OpenSSH form. ssh2's generator drops a leading zero byte of the
 * public half now and then (a key that no client accepts), so such a draw is thrown away.
 */
export function generateEd25519(): string {
  for (;;) {
    const generated = utils.generateKeyPairSync('ed25519');
    const publicHalf = utils.parseKey(generated.public);
    const privateKey = utils.parseKey(generated.private);
    if (!(publicHalf instanceof Error) && !(privateKey instanceof Error) && privateKey.getPublicSSH().equals(publicHalf.getPublicSSH())) return generated.private;
  }
}
