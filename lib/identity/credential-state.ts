/**
 * The validity rule of every bearer credential an account owns (API keys, inference grants),
 * written once: the gateway applies it to its in-memory caches on the hot path, the control-plane
 * API to rows it has just read from PostgreSQL, so the two can never disagree about a key.
 *
 * Order matters, because the answer labels rejection rows (docs/identity.md, blocklist) and auth-failure log lines:
 * a revoked credential is `revoked` whatever its owner's state; then the owner (deleted before
 * suspended); then expiry. Only a credential that passes all of them is `valid`.
 */

/** Why a presented credential does (`valid`) or does not authenticate. */
export type CredentialState = 'valid' | 'unknown' | 'revoked' | 'expired' | 'user_suspended' | 'user_deleted';

/** The state of an account on its own (access tokens name an account, not a credential). */
export type AccountState = Extract<CredentialState, 'valid' | 'unknown' | 'user_suspended' | 'user_deleted'>;

/** What the rule needs to know about an account. */
export interface AccountFacts {
  userSuspended: boolean;
  userDeleted: boolean;
}

/** What the rule needs to know about a credential and its owner. */
export interface CredentialFacts extends AccountFacts {
  revoked: boolean;
  /** Epoch milliseconds; null when the credential never expires. */
  expiresAt: number | null;
}

/** The account columns the rule reads (`users.suspended_at`, `users.deleted_at`). */
export interface AccountStateColumns {
  suspended_at: Date | null;
  deleted_at: Date | null;
}

/** The facts of an account row. */
export function accountFacts(row: AccountStateColumns): AccountFacts {
  return { userSuspended: row.suspended_at !== null, userDeleted: row.deleted_at !== null };
}

/** Whether an account may act: not deleted, not suspended (`unknown` when there is none). */
export function accountState(account: AccountFacts | undefined): AccountState {
  if (!account) return 'unknown';
  if (account.userDeleted) return 'user_deleted';
  if (account.userSuspended) return 'user_suspended';
  return 'valid';
}

/** Whether a credential authenticates at `now` (epoch ms), and why not. */
export function credentialState(credential: CredentialFacts | undefined, now = Date.now()): CredentialState {
  if (!credential) return 'unknown';
  if (credential.revoked) return 'revoked';
  const owner = accountState(credential);
  if (owner !== 'valid') return owner;
  if (credential.expiresAt !== null && credential.expiresAt <= now) return 'expired';
  return 'valid';
}
