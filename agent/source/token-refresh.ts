/**
 * Usable user tokens (docs/source-control.md, "Refresh"): a linked account's access token is
 * used as is while more than 5 minutes are left; within 5 minutes of its expiry it is refreshed
 * first. The refresh token is single-use at the provider, so two API replicas must never both
 * spend it: the refresher takes a row lease (`refresh_holder`, `refresh_lease_until`, PostgreSQL's
 * clock) with one guarded UPDATE, and the others poll the row until the new token is there (or
 * the lease lapses, when a crashed holder's lease is taken over). The new pair is written only
 * while the lease is still the writer's (fenced by the holder).
 *
 * A refresh the provider refuses (refresh token expired or revoked), or a refresh token past its
 * own expiry, marks the account as needing re-linking: every later use fails closed until the
 * owner links it again. A provider that does not answer leaves the account as it was; the still
 * valid token (less than 5 minutes left) is used, an expired one fails as unavailable.
 */
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { SealedSecretError, type SecretSealer } from '../../lib/sealed-secret';
import { newId } from '../jobs/job-store';
import { sealedTokenColumns, tokenName, type AccountRow } from './accounts';
import { ProviderError, type ScmProvider } from './provider';

/** Refresh starts this long before the access token expires (spec: 5 minutes). */
export const REFRESH_MARGIN_SECONDS = 300;
/** How long a refresher holds the row; longer than a provider call's deadline. */
export const REFRESH_LEASE_SECONDS = 30;

/** Why an account's token cannot be used now. */
export class AccountUnusableError extends Error {
  constructor(readonly reason: 'needs_relink' | 'unavailable', message: string) {
    super(message);
    this.name = 'AccountUnusableError';
  }
}

export interface TokenDeps {
  db: Db;
  sealer: SecretSealer;
  provider: ScmProvider;
  log: Logger;
  /** Milliseconds between reads while another replica refreshes. Default 100. */
  pollMs?: number;
}

type Snapshot = AccountRow & { fresh: boolean; leased: boolean; unexpired: boolean; refresh_expired: boolean };

async function snapshot(db: Db, accountId: string): Promise<Snapshot | undefined> {
  return db('agent_github_accounts').where({ account_id: accountId }).first<Snapshot | undefined>(
    '*',
    db.raw(`(access_token_expires_at is null or access_token_expires_at > now() + interval '${REFRESH_MARGIN_SECONDS} seconds') as fresh`),
    db.raw('(refresh_lease_until is not null and refresh_lease_until > now()) as leased'),
    db.raw('(access_token_expires_at is null or access_token_expires_at > now()) as unexpired'),
    db.raw('(refresh_token_expires_at is not null and refresh_token_expires_at <= now()) as refresh_expired'),
  );
}

/** Takes the refresh lease when nobody holds it and the token still needs a refresh. */
async function takeLease(db: Db, accountId: string, holder: string): Promise<boolean> {
  const taken = await db('agent_github_accounts')
    .where({ account_id: accountId })
    .whereNull('needs_relink_at')
    .whereRaw(`access_token_expires_at <= now() + interval '${REFRESH_MARGIN_SECONDS} seconds'`)
    .where((q) => q.whereNull('refresh_lease_until').orWhere('refresh_lease_until', '<=', db.fn.now()))
    .update({ refresh_holder: holder, refresh_lease_until: db.raw(`now() + interval '${REFRESH_LEASE_SECONDS} seconds'`) });
  return taken === 1;
}

/** Opens a sealed token of `row`; a token the configured key cannot open makes the account unusable (not a 500). */
function openToken(sealer: SecretSealer, row: AccountRow, kind: 'access' | 'refresh', sealed: string): string {
  try {
    return sealer.open(tokenName(row.account_id, kind), sealed);
  } catch (err) {
    if (!(err instanceof SealedSecretError)) throw err;
    throw new AccountUnusableError('needs_relink', `the ${row.provider} account ${row.login} must be linked again: its tokens cannot be decrypted with the configured AGENT_SOURCE_CONTROL_ENCRYPTION_KEY`);
  }
}

const releaseColumns = { refresh_holder: null, refresh_lease_until: null };

async function markRelink(deps: TokenDeps, row: AccountRow, holder: string, reason: string): Promise<never> {
  await deps.db('agent_github_accounts').where({ account_id: row.account_id, refresh_holder: holder })
    .update({ ...releaseColumns, needs_relink_at: deps.db.fn.now(), relink_reason: reason, updated_at: deps.db.fn.now() });
  deps.log.warn({ event: 'agent_source_control_relink_needed', account_id: row.account_id, provider: row.provider, reason }, 'a source-control account must be linked again');
  throw new AccountUnusableError('needs_relink', `the ${row.provider} account ${row.login} must be linked again: ${reason}`);
}

/** Refreshes under the lease `holder` holds; returns the new access token. */
async function refreshHeld(deps: TokenDeps, row: Snapshot, holder: string): Promise<string> {
  if (row.refresh_token_sealed === null) return markRelink(deps, row, holder, 'its token expired and it has no refresh token');
  if (row.refresh_expired) return markRelink(deps, row, holder, 'its refresh token expired');
  let tokens;
  try {
    tokens = await deps.provider.refresh(openToken(deps.sealer, row, 'refresh', row.refresh_token_sealed));
  } catch (err) {
    if (err instanceof ProviderError && err.kind === 'refused') return markRelink(deps, row, holder, `${row.provider} refused the refresh token (expired or revoked)`);
    await deps.db('agent_github_accounts').where({ account_id: row.account_id, refresh_holder: holder }).update(releaseColumns);
    if (err instanceof AccountUnusableError) throw err;
    deps.log.warn({ event: 'agent_source_control_refresh_failed', account_id: row.account_id, provider: row.provider, reason: (err as Error).message }, 'a source-control token could not be refreshed');
    if (row.unexpired) return openToken(deps.sealer, row, 'access', row.access_token_sealed);
    throw new AccountUnusableError('unavailable', `the ${row.provider} token of ${row.login} expired and ${row.provider} did not answer its refresh`);
  }
  const written = await deps.db('agent_github_accounts').where({ account_id: row.account_id, refresh_holder: holder })
    .update({ ...sealedTokenColumns(deps.sealer, row.account_id, tokens), ...releaseColumns, updated_at: deps.db.fn.now() });
  if (written === 0) throw new AccountUnusableError('unavailable', `the refresh of ${row.login}'s ${row.provider} token lost its lease`);
  deps.log.info({ event: 'agent_source_control_token_refreshed', account_id: row.account_id, provider: row.provider }, 'source-control token refreshed');
  return tokens.accessToken;
}

/**
 * The account's access token, refreshed first when less than 5 minutes are left (one refresher
 * across replicas). Throws {@link AccountUnusableError} when it cannot be used.
 */
export async function usableAccessToken(deps: TokenDeps, accountId: string): Promise<string> {
  const holder = newId('lease');
  const deadline = Date.now() + (REFRESH_LEASE_SECONDS + 5) * 1000;
  for (;;) {
    const row = await snapshot(deps.db, accountId);
    if (!row) throw new AccountUnusableError('needs_relink', 'the source-control account was unlinked');
    if (row.needs_relink_at) throw new AccountUnusableError('needs_relink', `the ${row.provider} account ${row.login} must be linked again: ${row.relink_reason ?? 'its token was refused'}`);
    if (row.fresh) return openToken(deps.sealer, row, 'access', row.access_token_sealed);
    if (!row.leased && await takeLease(deps.db, accountId, holder)) {
      const held = await snapshot(deps.db, accountId);
      if (held) return refreshHeld(deps, held, holder);
    }
    if (Date.now() > deadline) throw new AccountUnusableError('unavailable', `another refresh of ${row.login}'s ${row.provider} token did not finish`);
    await new Promise((resolve) => setTimeout(resolve, deps.pollMs ?? 100));
  }
}
