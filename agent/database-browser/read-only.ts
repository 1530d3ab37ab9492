/**
 * The database browser's transaction (docs/agent-admin.md "Database browser"): READ ONLY, with a
 * statement timeout local to it. Even a statement that somehow reached it could not write:
 * PostgreSQL refuses INSERT, UPDATE, DELETE, DDL and `nextval` in a read-only transaction
 * (SQLSTATE 25006), and switching to READ WRITE after the first statement is refused too.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';

export interface ReadOnlyOptions {
  /** `statement_timeout` for every statement of the transaction, milliseconds (a positive integer). */
  statementTimeoutMs: number;
}

/**
 * Runs `work` in a `BEGIN TRANSACTION READ ONLY` whose first statement sets `statement_timeout`
 * with `is_local` (the same as `SET LOCAL`: it ends with the transaction, so the pooled
 * connection goes back with its own setting) and checks that the transaction is read-only.
 */
export async function inReadOnlyTransaction<T>(db: Db, options: ReadOnlyOptions, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const ms = options.statementTimeoutMs;
  if (!Number.isSafeInteger(ms) || ms < 1) throw new AppError('internal', `statement timeout must be a positive integer of milliseconds, not ${ms}`);
  return db.transaction(async (trx) => {
    const { rows } = await trx.raw<{ rows: Array<{ timeout: string; read_only: string }> }>(
      "select set_config('statement_timeout', ?, true) as timeout, current_setting('transaction_read_only') as read_only",
      [`${ms}ms`],
    );
    if (rows[0]?.read_only !== 'on') throw new AppError('internal', 'the database browser transaction is not read-only');
    return work(trx);
  }, { readOnly: true });
}
