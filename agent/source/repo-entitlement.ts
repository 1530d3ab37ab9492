/**
 * Repository entitlement at job creation (docs/source-control.md, "Entitlement"): a job may name
 * a repository when the deployment allowlist names it, or when one of the owner's linked accounts
 * has a grant for it. A grant counts only through a usable connection: the account's token is
 * refreshed when due, and grants older than `AGENT_SOURCE_CONTROL_GRANTS_MAX_AGE_SECONDS` are
 * fetched again from the provider first. Anything failing (no key, provider not configured or
 * down, a token that cannot be refreshed or is refused) fails closed with 403 naming the cause.
 *
 * Matching: a URL (`https://host/owner/name`, `.git` and a trailing `/` ignored, case-insensitive)
 * matches a grant with that web URL on any provider; a bare `owner/name` matches only grants of
 * the source-control app (`github`), so a Gitea repository never entitles a same-named GitHub one.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { Logger } from '../../lib/logger';
import { repoEntitled } from '../jobs/entitlement';
import { replaceGrants, type AccountRow } from './accounts';
import { ProviderError } from './provider';
import type { SourceControl } from './source-control';
import { AccountUnusableError, usableAccessToken } from './token-refresh';

export interface EntitlementDeps {
  db: Db;
  sc: SourceControl;
  log: Logger;
  allowlist: readonly string[];
  grantsMaxAgeSeconds: number;
}

function normalizeUrl(url: string): string {
  return url.trim().replace(/\/+$/, '').replace(/\.git$/i, '').toLowerCase();
}

async function hasGrant(db: Db, account: AccountRow, repo: string): Promise<boolean> {
  const q = db('agent_repo_grants').where({ account_id: account.account_id });
  if (repo.includes('://')) q.whereRaw(`lower(regexp_replace(regexp_replace(repo_url, '/+$', ''), '\\.git$', '', 'i')) = ?`, [normalizeUrl(repo)]);
  else if (account.provider === 'github') q.whereRaw('lower(repo_full_name) = ?', [repo.trim().toLowerCase()]);
  else return false;
  return (await q.first<unknown>(db.raw('1 as present'))) !== undefined;
}

/** Whether `account` grants `repo` now; throws what made the check impossible. */
async function accountGrants(deps: EntitlementDeps, account: AccountRow & { stale: boolean }, repo: string): Promise<boolean> {
  if (!repo.includes('://') && account.provider !== 'github') return false;
  const matched = await hasGrant(deps.db, account, repo);
  if (!matched && !account.stale) return false;
  const provider = deps.sc.providers.get(account.provider);
  if (!provider) throw new AccountUnusableError('unavailable', `the ${account.provider} provider is not configured on this deployment any more`);
  if (!deps.sc.sealer) throw new AccountUnusableError('unavailable', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY is not set, so linked accounts cannot be used');
  const token = await usableAccessToken({ db: deps.db, sealer: deps.sc.sealer, provider, log: deps.log }, account.account_id);
  if (!account.stale) return true;
  try {
    await replaceGrants(deps.db, account.account_id, await provider.repositories(token));
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.kind === 'refused') {
      await deps.db('agent_github_accounts').where({ account_id: account.account_id })
        .update({ needs_relink_at: deps.db.fn.now(), relink_reason: `${account.provider} refused its token (revoked)`, updated_at: deps.db.fn.now() });
      throw new AccountUnusableError('needs_relink', `the ${account.provider} account ${account.login} must be linked again: ${account.provider} refused its token`);
    }
    throw new AccountUnusableError('unavailable', `${account.provider} did not list the repositories of ${account.login} (${err.message})`);
  }
  return hasGrant(deps.db, account, repo);
}

/** Throws 403 unless `repo` is on the allowlist or granted to `ownerId` through a usable linked account. */
export async function assertRepoEntitledFor(deps: EntitlementDeps, ownerId: number, repo: string): Promise<void> {
  if (repoEntitled(repo, deps.allowlist)) return;
  const accounts = await deps.db('agent_github_accounts').where({ user_id: ownerId }).orderBy('created_at')
    .select<Array<AccountRow & { stale: boolean }>>('*', deps.db.raw(`(grants_refreshed_at is null or grants_refreshed_at < now() - make_interval(secs => ?)) as stale`, [deps.grantsMaxAgeSeconds]));
  const problems: string[] = [];
  for (const account of accounts) {
    try {
      if (await accountGrants(deps, account, repo)) return;
    } catch (err) {
      if (!(err instanceof AccountUnusableError)) throw err;
      problems.push(err.message);
    }
  }
  const base = 'Repository is not entitled: it is not on this deployment\'s allowlist';
  if (accounts.length === 0) throw new AppError('forbidden', `${base}, and you have no linked source-control account`);
  if (problems.length > 0) throw new AppError('forbidden', `${base}, and your linked accounts could not be checked: ${problems.join('; ')}. Nothing was created`);
  throw new AppError('forbidden', `${base}, and none of your linked source-control accounts grants it`);
}
