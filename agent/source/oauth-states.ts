/**
 * OAuth states of account linking (docs/source-control.md, "Linking"): 256 random bits, stored
 * only as their SHA-256, bound to one owner and one provider, valid 10 minutes, consumed once.
 * Consuming is one guarded UPDATE, so of two callbacks racing with one state only one wins; a
 * state that is unknown, consumed, expired, or issued to another owner or for another provider
 * is refused (400) and nothing changes: a wrong presentation does not consume it.
 * A provider with PKCE gets a verifier (sealed at rest) whose S256 challenge goes in the URL.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { SealedSecretError, type SecretSealer } from '../../lib/sealed-secret';
import { hashSecret } from '../../lib/crypto';
import type { ProviderName } from './provider';

/** Lifetime of a state (spec: 10 minutes). */
export const STATE_TTL_SECONDS = 600;

export interface IssuedState {
  state: string;
  expiresAt: Date;
  /** The PKCE S256 challenge, when asked for one. */
  codeChallenge?: string;
}

function verifierName(stateHash: string): string {
  return `agent_source_control_oauth_states:${stateHash}:pkce_verifier`;
}

/** The S256 challenge of a PKCE verifier (RFC 7636). */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Issues a state for `userId` and `provider` (with a PKCE verifier when `pkce`); drops states expired over a day ago. */
export async function issueState(db: Db, sealer: SecretSealer, input: { userId: number; provider: ProviderName; pkce: boolean }): Promise<IssuedState> {
  const state = randomBytes(32).toString('base64url');
  const stateHash = hashSecret(state);
  const verifier = input.pkce ? randomBytes(32).toString('base64url') : undefined;
  const [row] = await db('agent_source_control_oauth_states')
    .insert({
      state_hash: stateHash, user_id: input.userId, provider: input.provider,
      pkce_verifier_sealed: verifier === undefined ? null : sealer.seal(verifierName(stateHash), verifier),
      expires_at: db.raw(`now() + interval '${STATE_TTL_SECONDS} seconds'`),
    })
    .returning<Array<{ expires_at: Date }>>('expires_at');
  await db('agent_source_control_oauth_states').where('expires_at', '<', db.raw(`now() - interval '1 day'`)).delete();
  return { state, expiresAt: row!.expires_at, ...(verifier === undefined ? {} : { codeChallenge: pkceChallenge(verifier) }) };
}

interface StateRow {
  user_id: string;
  provider: string;
  expired: boolean;
  consumed_at: Date | null;
  pkce_verifier_sealed: string | null;
}

/** Why a state that did not consume was refused: one clear sentence per case. */
function refusal(row: StateRow | undefined, userId: number, provider: ProviderName): AppError {
  const why = !row ? 'is unknown'
    : Number(row.user_id) !== userId ? 'was not issued to you'
      : row.provider !== provider ? `was issued for another provider, not ${provider}`
        : row.consumed_at ? 'was already used'
          : row.expired ? `expired (a state is valid for ${STATE_TTL_SECONDS / 60} minutes)` : 'cannot be used';
  return new AppError('invalid_request', `The OAuth state ${why}; start linking again`, { param: 'state' });
}

/**
 * Consumes `state` for `userId` and `provider`, exactly once. Returns the PKCE verifier (or
 * undefined without PKCE); throws 400 naming why otherwise, leaving the state as it was.
 */
export async function consumeState(db: Db, sealer: SecretSealer, input: { state: string; userId: number; provider: ProviderName }): Promise<string | undefined> {
  const stateHash = hashSecret(input.state);
  const [consumed] = await db('agent_source_control_oauth_states')
    .where({ state_hash: stateHash, user_id: input.userId, provider: input.provider })
    .whereNull('consumed_at')
    .where('expires_at', '>', db.fn.now())
    .update({ consumed_at: db.fn.now() })
    .returning<Array<{ pkce_verifier_sealed: string | null }>>('pkce_verifier_sealed');
  if (!consumed) {
    const row = await db('agent_source_control_oauth_states').where({ state_hash: stateHash })
      .first<StateRow | undefined>('user_id', 'provider', 'consumed_at', 'pkce_verifier_sealed', db.raw('expires_at <= now() as expired'));
    throw refusal(row, input.userId, input.provider);
  }
  if (consumed.pkce_verifier_sealed === null) return undefined;
  try {
    return sealer.open(verifierName(stateHash), consumed.pkce_verifier_sealed);
  } catch (err) {
    if (!(err instanceof SealedSecretError)) throw err;
    throw new AppError('service_unavailable', 'The PKCE verifier of this state cannot be decrypted with the configured AGENT_SOURCE_CONTROL_ENCRYPTION_KEY; start linking again');
  }
}
