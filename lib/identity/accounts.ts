/**
 * The account behind a credential, read fresh from PostgreSQL. An access token carries the role
 * its account had when it was issued, so every check that grants more than inference (the
 * gateway's admin API, the control plane's owner and operator routes) re-reads the account and
 * applies {@link accountState} before trusting it: a suspension, deletion, demotion or withdrawn
 * permission takes effect at once.
 */
import type { Db } from '../db';
import { accountFacts, type AccountFacts, type AccountStateColumns } from './credential-state';
import { roleOf, type Role } from './roles';

/** An account as authorization sees it. */
export interface AccountRecord extends AccountFacts {
  userId: number;
  role: Role;
  /** Granted permissions (`agent.use`, `agent.admin`, …). */
  permissions: string[];
}

/** The account columns {@link accountRecord} reads, under any table alias. */
export interface AccountRow extends AccountStateColumns {
  user_id: string;
  role: string;
  permissions: string[];
}

/** The record of an account row. */
export function accountRecord(row: AccountRow): AccountRecord {
  return { userId: Number(row.user_id), role: roleOf(row.role), permissions: row.permissions, ...accountFacts(row) };
}

/** The account `userId` as it is now (any state), or undefined when there is none. */
export async function readAccount(db: Db, userId: number): Promise<AccountRecord | undefined> {
  const row = await db('users').where({ id: userId })
    .first<AccountRow | undefined>('id as user_id', 'role', 'permissions', 'suspended_at', 'deleted_at');
  return row ? accountRecord(row) : undefined;
}
