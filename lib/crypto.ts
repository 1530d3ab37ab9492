/**
 * Secrets issued by the service (host credentials, later API keys): random, shown once,
 * stored only as a SHA-256 digest. A 256-bit random secret needs no slow hash: the digest
 * cannot be brute-forced, and lookup by digest stays one indexed query.
 */
import { hash, randomBytes } from 'node:crypto';

/** A new secret `<prefix>_<43 base64url chars>`. */
export function generateSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/**
 * Hex SHA-256 of a secret, as stored at rest. The one-shot `crypto.hash` (no Hash object): the
 * gateway hashes the presented API key on every request, and `createHash` cost ~6 µs of it.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** The visible part of a secret (prefix plus a few characters), safe to show and log. */
export function secretPrefix(secret: string): string {
  const underscore = secret.indexOf('_');
  return secret.slice(0, underscore >= 0 ? underscore + 7 : 6);
}
