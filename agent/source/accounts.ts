/**
 * Owners' linked source-control accounts and their repository grants (docs/source-control.md):
 * one owner of the SQL of `agent_github_accounts` and `agent_repo_grants`. Tokens are sealed with
 * the source-control key, bound (as authenticated data) to the account id and the token's kind,
 * so a sealed token copied to another account or kind does not open. Views never carry a token.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { SecretSealer } from '../../lib/sealed-secret';
import { newId } from '../jobs/job-store';
import type { ProviderName, ProviderUser, RepoGrant, TokenSet } from './provider';

/** An account row as stored (tokens sealed). */
export interface AccountRow {
  account_id: string;
  user_id: string;
  provider: ProviderName;
  provider_account_id: string;
  login: string;
  access_token_sealed: string;
  access_token_expires_at: Date | null;
  refresh_token_sealed: string | null;
  refresh_token_expires_at: Date | null;
  scopes: string;
  needs_relink_at: Date | null;
  relink_reason: string | null;
  refresh_holder: string | null;
  refresh_lease_until: Date | null;
  grants_refreshed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What an owner sees of an account: no token, only when they expire. */
export interface AccountView {
  account_id: string;
  provider: ProviderName;
  provider_account_id: string;
  login: string;
  status: 'linked' | 'needs_relink';
  relink_reason: string | null;
  scopes: string;
  access_token_expires_at: string | null;
  refresh_token_expires_at: string | null;
  repositories: number;
  grants_refreshed_at: string | null;
  created_at: string;
}

/** The authenticated-data name a token of `accountId` is sealed under. */
export function tokenName(accountId: string, kind: 'access' | 'refresh'): string {
  return `agent_github_accounts:${accountId}:${kind}_token`;
}

/** The columns a token set is stored as. */
export function sealedTokenColumns(sealer: SecretSealer, accountId: string, tokens: TokenSet): Partial<AccountRow> {
  return {
    access_token_sealed: sealer.seal(tokenName(accountId, 'access'), tokens.accessToken),
    access_token_expires_at: tokens.accessTokenExpiresAt,
    refresh_token_sealed: tokens.refreshToken === null ? null : sealer.seal(tokenName(accountId, 'refresh'), tokens.refreshToken),
    refresh_token_expires_at: tokens.refreshTokenExpiresAt,
    scopes: tokens.scopes,
  };
}

/** Replaces the account's grants with `grants` and stamps `grants_refreshed_at`. */
export async function replaceGrants(db: Db | Knex.Transaction, accountId: string, grants: readonly RepoGrant[]): Promise<void> {
  const write = async (trx: Knex.Transaction) => {
    await trx('agent_repo_grants').where({ account_id: accountId }).delete();
    const unique = new Map(grants.map((g) => [g.fullName, g]));
    const rows = [...unique.values()].map((g) => ({ account_id: accountId, repo_full_name: g.fullName, repo_url: g.url, permissions: JSON.stringify(g.permissions) }));
    for (let i = 0; i < rows.length; i += 500) await trx('agent_repo_grants').insert(rows.slice(i, i + 500));
    await trx('agent_github_accounts').where({ account_id: accountId }).update({ grants_refreshed_at: trx.fn.now(), updated_at: trx.fn.now() });
  };
  // On a transaction this is a savepoint: the grants change with the caller's transaction.
  await db.transaction(write);
}

export interface LinkInput {
  userId: number;
  provider: ProviderName;
  user: ProviderUser;
  tokens: TokenSet;
  grants: readonly RepoGrant[];
}

/**
 * Stores a freshly linked account (or re-links the same provider account of the same owner: new
 * tokens, relink flag and lease cleared) with its grants, in one transaction. Returns its id.
 */
export async function storeLinkedAccount(db: Db, sealer: SecretSealer, input: LinkInput): Promise<string> {
  try {
    return await storeOnce(db, sealer, input);
  } catch (err) {
    // Two callbacks linking the same provider account at once: the loser's insert hits the unique
    // key; once more, it finds the winner's row and updates it.
    if ((err as { code?: string }).code !== '23505') throw err;
    return storeOnce(db, sealer, input);
  }
}

function storeOnce(db: Db, sealer: SecretSealer, input: LinkInput): Promise<string> {
  return db.transaction(async (trx) => {
    const key = { user_id: input.userId, provider: input.provider, provider_account_id: input.user.id };
    const existing = await trx('agent_github_accounts').where(key).forUpdate().first<{ account_id: string } | undefined>('account_id');
    const accountId = existing?.account_id ?? newId('sca');
    const columns = {
      ...sealedTokenColumns(sealer, accountId, input.tokens), login: input.user.login,
      needs_relink_at: null, relink_reason: null, refresh_holder: null, refresh_lease_until: null, updated_at: trx.fn.now(),
    };
    if (existing) await trx('agent_github_accounts').where({ account_id: accountId }).update(columns);
    else await trx('agent_github_accounts').insert({ account_id: accountId, ...key, ...columns });
    await replaceGrants(trx, accountId, input.grants);
    return accountId;
  });
}

function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}

/** The owner's accounts, newest first, each with its number of repository grants. */
export async function listAccounts(db: Db, userId: number): Promise<AccountView[]> {
  const rows = await db('agent_github_accounts as a')
    .where('a.user_id', userId)
    .select('a.*', db.raw('(select count(*) from agent_repo_grants g where g.account_id = a.account_id)::int as repositories'))
    .orderBy([{ column: 'a.created_at', order: 'desc' }, { column: 'a.account_id', order: 'asc' }]) as Array<AccountRow & { repositories: number }>;
  return rows.map((r) => ({
    account_id: r.account_id, provider: r.provider, provider_account_id: r.provider_account_id, login: r.login,
    status: r.needs_relink_at ? 'needs_relink' : 'linked', relink_reason: r.relink_reason, scopes: r.scopes,
    access_token_expires_at: iso(r.access_token_expires_at), refresh_token_expires_at: iso(r.refresh_token_expires_at),
    repositories: r.repositories, grants_refreshed_at: iso(r.grants_refreshed_at), created_at: r.created_at.toISOString(),
  }));
}

/** The owner's account `accountId`; 404 when it is not theirs (another owner's looks absent). */
export async function findOwnedAccount(db: Db, accountId: string, userId: number): Promise<AccountRow> {
  const row = await db('agent_github_accounts').where({ account_id: accountId, user_id: userId }).first<AccountRow | undefined>();
  if (!row) throw new AppError('not_found', `No linked source-control account '${accountId}'`);
  return row;
}

/** The repositories an owned account grants, by name. */
export async function listGrants(db: Db, accountId: string): Promise<Array<{ repo: string; url: string; permissions: Record<string, boolean>; refreshed_at: string }>> {
  const rows = await db('agent_repo_grants').where({ account_id: accountId }).orderBy('repo_full_name')
    .select<Array<{ repo_full_name: string; repo_url: string; permissions: Record<string, boolean>; refreshed_at: Date }>>('repo_full_name', 'repo_url', 'permissions', 'refreshed_at');
  return rows.map((r) => ({ repo: r.repo_full_name, url: r.repo_url, permissions: r.permissions, refreshed_at: r.refreshed_at.toISOString() }));
}

/** Unlinks (deletes) the owner's account and its grants; 404 when it is not theirs. */
export async function unlinkAccount(db: Db, accountId: string, userId: number): Promise<void> {
  const deleted = await db('agent_github_accounts').where({ account_id: accountId, user_id: userId }).delete();
  if (deleted === 0) throw new AppError('not_found', `No linked source-control account '${accountId}'`);
}
