/**
 * Repository entitlement: a job may name a repository only when the deployment
 * allowlist (`AGENT_REPO_ALLOWLIST`) names it. It fails closed: an empty allowlist entitles no
 * repository. Entries are exact repository strings (`owner/name`, a URL) or URL prefixes ending
 * in `/` (`https://git.example.com/team/`). Job creation also accepts a linked account's grant
 * (agent/source/repo-entitlement.ts).
 */
import { AppError } from '../../lib/errors';

export function parseAllowlist(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

export function repoEntitled(repo: string, allowlist: readonly string[]): boolean {
  return allowlist.some((entry) => entry === repo || (entry.endsWith('/') && entry.includes('://') && repo.startsWith(entry)));
}

/** Throws 403 unless `repo` is entitled. */
export function assertRepoEntitled(repo: string, allowlist: readonly string[]): void {
  if (!repoEntitled(repo, allowlist)) {
    throw new AppError('forbidden', 'Repository is not entitled: it is not on this deployment\'s allowlist');
  }
}
