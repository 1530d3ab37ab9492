/**
 * A linked account's connection, used: its usable access token (refreshed when due, see
 * token-refresh.ts) and a fresh listing of the repositories it may access, replacing the stored
 * grants (docs/source-control.md, "Entitlement"). A listing the provider refuses (401: the token
 * was revoked) marks the account for re-linking. Failures are {@link AccountUnusableError}.
 */
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import { replaceGrants, type AccountRow } from './accounts';
import { ProviderError } from './provider';
import type { SourceControl } from './source-control';
import { AccountUnusableError, usableAccessToken } from './token-refresh';

export interface ConnectionDeps {
  db: Db;
  sc: SourceControl;
  log: Logger;
}

/** The account's access token, refreshed when due; throws when the account cannot be used. */
export async function accountToken(deps: ConnectionDeps, account: AccountRow): Promise<string> {
  const provider = deps.sc.providers.get(account.provider);
  if (!provider) throw new AccountUnusableError('unavailable', `the ${account.provider} provider is not configured on this deployment any more`);
  if (!deps.sc.sealer) throw new AccountUnusableError('unavailable', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY is not set, so linked accounts cannot be used');
  return usableAccessToken({ db: deps.db, sealer: deps.sc.sealer, provider, log: deps.log }, account.account_id);
}

/** Fetches the account's repositories from its provider again and replaces its grants; returns how many. */
export async function refreshAccountGrants(deps: ConnectionDeps, account: AccountRow): Promise<number> {
  const token = await accountToken(deps, account);
  const provider = deps.sc.providers.get(account.provider)!;
  try {
    const grants = await provider.repositories(token);
    await replaceGrants(deps.db, account.account_id, grants);
    return grants.length;
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.kind === 'refused') {
      await deps.db('agent_github_accounts').where({ account_id: account.account_id })
        .update({ needs_relink_at: deps.db.fn.now(), relink_reason: `${account.provider} refused its token (revoked)`, updated_at: deps.db.fn.now() });
      deps.log.warn({ event: 'agent_source_control_relink_needed', account_id: account.account_id, provider: account.provider, reason: 'token refused' }, 'a source-control account must be linked again');
      throw new AccountUnusableError('needs_relink', `the ${account.provider} account ${account.login} must be linked again: ${account.provider} refused its token`);
    }
    throw new AccountUnusableError('unavailable', `${account.provider} did not list the repositories of ${account.login} (${err.message})`);
  }
}
