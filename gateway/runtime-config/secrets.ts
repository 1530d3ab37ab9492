/**
 * Provider credentials are stored so the gateway can call upstreams, and shown only as a short
 * prefix and a fingerprint (the first 12 hex characters of their SHA-256), never in full.
 */
import { createHash } from 'node:crypto';

/** Stable, non-reversible identity of a key: shown in listings and used to name environment keys. */
export function keyFingerprint(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12);
}

/** The first few characters of a key (at most 4, and never more than a quarter of it). */
export function keyPrefix(key: string): string {
  return key.slice(0, Math.min(4, Math.floor(key.length / 4)));
}

/** The public view of a key: prefix and fingerprint only. */
export function keyView(key: string): { prefix: string; fingerprint: string } {
  return { prefix: keyPrefix(key), fingerprint: keyFingerprint(key) };
}
