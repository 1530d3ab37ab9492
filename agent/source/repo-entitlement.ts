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
import type { AccountRow } from './accounts';
import { accountToken, refreshAccountGrants } from './grants';
import type { SourceControl } from './source-control';
import { AccountUnusableError } from './token-refresh';

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
  if (!account.stale) {
    await accountToken(deps, account);
    return true;
  }
  await refreshAccountGrants(deps, account);
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
