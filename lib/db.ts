/**
 * PostgreSQL access through knex. One pool per process, created from settings and passed down.
 */
import knex, { type Knex } from 'knex';
import type { Logger } from './logger';

export type Db = Knex;

export interface DbOptions {
  url: string;
  poolMax?: number;
  /** Milliseconds to wait for a pooled connection before failing. Default 5000. */
  acquireTimeoutMs?: number;
  /** Application name shown in `pg_stat_activity`. */
  applicationName?: string;
  /** Where knex's own warnings go (default: the console). */
  log?: Logger;
}

/** Creates a knex instance for PostgreSQL. Connecting is lazy: the first query opens the pool. */
export function createDb(options: DbOptions): Db {
  return knex({
    client: 'pg',
    connection: { connectionString: options.url, application_name: options.applicationName ?? 'gateway' },
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: options.acquireTimeoutMs ?? 5000,
    ...(options.log ? { log: knexLog(options.log) } : {}),
  });
}

function knexLog(log: Logger): Knex.Config['log'] {
  return {
    warn: (message: unknown) => log.warn({ source: 'knex' }, String(message)),
    error: (message: unknown) => log.error({ source: 'knex' }, String(message)),
    deprecate: (method: string, alternative: string) => log.warn({ source: 'knex' }, `${method} is deprecated: use ${alternative}`),
    debug: (message: unknown) => log.debug({ source: 'knex' }, String(message)),
  };
}

/** True when `select 1` answers within `timeoutMs`. Never throws. */
export async function pingDb(db: Db, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('database ping timed out')), timeoutMs);
    });
    await Promise.race([db.raw('select 1'), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
