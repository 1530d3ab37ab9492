/**
 * The one constant-time comparison of the code base: every credential check (API keys and host
 * credentials against stored digests, the admin and dispatch tokens against configuration,
 * JWT signatures, password hashes) goes through {@link constantTimeEqual}, so timing never
 * tells a guesser how much of a secret was right.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { hashSecret } from '../crypto';

/**
 * Whether two byte strings are equal, in time that depends only on their lengths (a length
 * difference answers false at once: lengths here are public, digests and signatures are fixed-size).
 */
export function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether a presented token equals a configured one (`ADMIN_TOKEN`, `GATEWAY_GRANT_DISPATCH_TOKEN`).
 * Both sides are digested first, so neither the content nor the length of the configured token
 * leaks; false when either side is absent.
 */
export function tokenEquals(presented: string | undefined, configured: string | undefined): boolean {
  if (presented === undefined || configured === undefined) return false;
  return constantTimeEqual(hash('sha256', presented, 'buffer'), hash('sha256', configured, 'buffer'));
}

/** Whether a presented secret matches a stored hex SHA-256 digest (lib/crypto.ts `hashSecret`). */
export function secretMatches(secret: string, storedHash: string): boolean {
  return constantTimeEqual(Buffer.from(hashSecret(secret), 'hex'), Buffer.from(storedHash, 'hex'));
}
