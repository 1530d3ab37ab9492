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

/** Socket errors that mean the server is not there (or went away), not that a statement failed. */
const UNREACHABLE_SOCKET_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a server that is away rather than a statement it refused: class 08 (connection
 * exception), `57P01` admin shutdown, `57P02` crash shutdown, `57P03` cannot connect now (starting
 * up or recovering after a crash).
 */
function unavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}

/**
 * Whether `err` (or an error it wraps) says PostgreSQL cannot be reached now: a refused or broken
 * connection, the server shutting down or still recovering, or no pooled connection within the
 * acquire timeout. A statement the server answered with an error (a constraint, bad SQL) is not.
 * The HTTP layer answers these with 503 instead of 500 (docs/errors-and-health.md, "Outages").
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (name === 'KnexTimeoutError') return true;
    if (typeof code === 'string' && (UNREACHABLE_SOCKET_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && unavailableSqlState(code)))) return true;
    // node-postgres reports a connection that ended under a query by message only (knex prefixes the SQL and " - ").
    if (typeof message === 'string' && /(^| - )Connection terminated( unexpectedly| due to connection timeout)?$/.test(message)) return true;
  }
  return false;
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
