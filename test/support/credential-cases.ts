/**
 * The cases of the credential validity rule (lib/identity/credential-state.ts), as one table that
 * every path applying the rule is run against: the rule itself and the gateway's key cache in
 * test/unit/lib/identity/credential-state.test.ts, the fresh PostgreSQL lookup of the
 * control-plane API and the cache filled from the same rows in
 * test/integration/identity-credential-rule.test.ts.
 */
import type { CredentialFacts, CredentialState } from '../../lib/identity/credential-state';

export interface CredentialCase {
  name: string;
  /** False: a secret that was never issued (no row). */
  issued: boolean;
  revoked?: boolean;
  /** Expiry relative to now, in ms (negative: in the past); absent: never expires. */
  expiresInMs?: number;
  suspended?: boolean;
  deleted?: boolean;
  expected: CredentialState;
}

export const CREDENTIAL_CASES: readonly CredentialCase[] = [
  { name: 'a live key without expiry', issued: true, expected: 'valid' },
  { name: 'a live key expiring in an hour', issued: true, expiresInMs: 3_600_000, expected: 'valid' },
  { name: 'a secret never issued', issued: false, expected: 'unknown' },
  { name: 'a revoked key', issued: true, revoked: true, expected: 'revoked' },
  { name: 'a key expired a minute ago', issued: true, expiresInMs: -60_000, expected: 'expired' },
  { name: 'a key of a suspended account', issued: true, suspended: true, expected: 'user_suspended' },
  { name: 'a key of a deleted account', issued: true, deleted: true, expected: 'user_deleted' },
  { name: 'a revoked key of a deleted account (revocation first)', issued: true, revoked: true, deleted: true, expected: 'revoked' },
  { name: 'a key of a deleted, suspended account (deletion first)', issued: true, suspended: true, deleted: true, expected: 'user_deleted' },
  { name: 'an expired key of a suspended account (the owner first)', issued: true, suspended: true, expiresInMs: -60_000, expected: 'user_suspended' },
];

/** The facts of a case's credential at `now` (undefined for a secret never issued). */
export function factsOf(c: CredentialCase, now: number): CredentialFacts | undefined {
  if (!c.issued) return undefined;
  return {
    revoked: c.revoked ?? false,
    expiresAt: c.expiresInMs === undefined ? null : now + c.expiresInMs,
    userSuspended: c.suspended ?? false,
    userDeleted: c.deleted ?? false,
  };
}
