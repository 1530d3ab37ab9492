/**
 * Test databases: one migrated template per migration set (named by a hash of the migrations),
 * cloned into a fresh database per test file. Databases of dead test processes are dropped.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDb, type Db } from '../../lib/db';
import { migrateLatest } from '../../migrations/runner';
import { captureLogs } from './logs';
import { processAlive } from '../../lib/process-alive';

/** knex warnings of test pools are collected, not printed (tests assert on errors directly). */
const quiet = captureLogs('test-db', 'warn').log;

/** Server holding test databases; the dev stack's PostgreSQL by default. */
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://gateway:gateway@127.0.0.1:5432/postgres';

function urlFor(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

function migrationsHash(): string {
  const dir = join(__dirname, '../../migrations');
  const hash = createHash('sha256');
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(join(dir, file)));
  return hash.digest('hex').slice(0, 12);
}

let templatePromise: Promise<string> | undefined;
let counter = 0;


async function prepareTemplate(): Promise<string> {
  const template = `gw_tpl_${migrationsHash()}`;
  const admin = createDb({ url: ADMIN_URL, poolMax: 1, applicationName: 'test-admin' });
  try {
    await admin.raw('select pg_advisory_lock(727001)');
    try {
      // A template of another migration set may belong to a concurrent run from another
      // checkout: it is dropped only once it is older than a day (its comment holds its birth).
      const rows = await admin.raw<{ rows: Array<{ datname: string; born: string | null }> }>(
        `select datname, shobj_description(oid, 'pg_database') as born from pg_database where datname like 'gw\\_%'`,
      );
      for (const { datname, born } of rows.rows) {
        const testDb = /^gw_test_(\d+)_\d+$/.exec(datname);
        const staleTemplate = datname.startsWith('gw_tpl_') && datname !== template && !(Number(born) > Date.now() - 86_400_000);
        if (staleTemplate || (testDb && !processAlive(Number(testDb[1])))) {
          await admin.raw(`drop database if exists ${datname} with (force)`);
        }
      }
      const exists = rows.rows.some((r) => r.datname === template);
      if (!exists) {
        await admin.raw(`create database ${template}_building`).catch(async () => {
          await admin.raw(`drop database ${template}_building with (force)`);
          await admin.raw(`create database ${template}_building`);
        });
        const db = createDb({ url: urlFor(`${template}_building`), poolMax: 1 });
        try {
          await migrateLatest(db);
        } finally {
          await db.destroy();
        }
        await admin.raw(`alter database ${template}_building rename to ${template}`);
        await admin.raw(`comment on database ${template} is '${Date.now()}'`);
      }
    } finally {
      await admin.raw('select pg_advisory_unlock(727001)');
    }
  } finally {
    await admin.destroy();
  }
  return template;
}

export interface TestDatabase {
  name: string;
  url: string;
  db: Db;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * Drops a test database. `with (force)` cannot end a backend of a role the test user may not
 * signal (an autovacuum worker that just started on it: SQLSTATE 42501), so that refusal is
 * retried for a few seconds.
 */
async function dropWithRetry(name: string): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await adminStatement(`drop database if exists ${name} with (force)`);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '42501' || attempt >= 25) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Runs one statement on the server's admin connection. */
async function adminStatement(sql: string): Promise<void> {
  const admin = createDb({ url: ADMIN_URL, poolMax: 1, applicationName: 'test-admin' });
  try {
    await admin.raw(sql);
  } finally {
    await admin.destroy();
  }
}

/** Creates `gw_test_<pid>_<n>` (from `template` when given) and opens a pool on it. */
async function createTestDatabase(template: string | undefined, poolMax = 5): Promise<TestDatabase> {
  counter += 1;
  const name = `gw_test_${process.pid}_${counter}`;
  await adminStatement(template ? `create database ${name} template ${template}` : `create database ${name}`);
  const url = urlFor(name);
  const db = createDb({ url, poolMax, applicationName: 'test', log: quiet });
  return {
    name,
    url,
    db,
    drop: async () => {
      await db.destroy();
      await dropWithRetry(name);
    },
  };
}

/** A fresh, migrated database for one test file (`poolMax` connections in its pool, default 5). */
export async function freshDatabase(options: { poolMax?: number } = {}): Promise<TestDatabase> {
  templatePromise ??= prepareTemplate();
  return createTestDatabase(await templatePromise, options.poolMax);
}

/**
 * Mocha hooks for a describe block: one fresh database before its tests, dropped after them.
 * `use` receives it (e.g. `freshDatabaseForBlock((db) => { t = db; })`).
 */
export function freshDatabaseForBlock(use: (t: TestDatabase) => void): void {
  let current: TestDatabase | undefined;
  before(async () => {
    current = await freshDatabase();
    use(current);
  });
  after(async () => {
    await current?.drop();
  });
}

/** An empty (unmigrated) database, for migration tests. */
export function emptyDatabase(): Promise<TestDatabase> {
  return createTestDatabase(undefined);
}
