/**
 * Migration runner over the ordered list in `migrations/index.ts`. A static list (rather than
 * a directory scan) works the same under tsx and in the compiled `dist/`.
 */
import type { Knex } from 'knex';
import { migrations, type Migration } from './index';
import { assertEmpty } from './support';
import type { Db } from '../lib/db';

class ListMigrationSource implements Knex.MigrationSource<Migration> {
  constructor(private readonly list: readonly Migration[]) {}
  getMigrations(): Promise<Migration[]> {
    return Promise.resolve([...this.list]);
  }
  getMigrationName(migration: Migration): string {
    return migration.name;
  }
  getMigration(migration: Migration): Promise<Knex.Migration> {
    return Promise.resolve({ up: migration.up, down: migration.down });
  }
}

const config = (): Knex.MigratorConfig => ({ migrationSource: new ListMigrationSource(migrations), tableName: 'knex_migrations' });

/** Applies every pending migration; returns the names applied. */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest(config())) as [number, string[]];
  return applied;
}

/**
 * Refuses (before reverting anything) when a table created by a migration of the last batch holds
 * rows, so a refused revert leaves every table in place.
 */
async function refuseLossyRevert(db: Db): Promise<void> {
  if (!(await db.schema.hasTable('knex_migrations'))) return;
  const last = await db('knex_migrations').max<{ batch: number | null }>('batch as batch').first();
  if (!last?.batch) return;
  const names = new Set((await db('knex_migrations').where({ batch: last.batch }).select<Array<{ name: string }>>('name')).map((r) => r.name));
  for (const migration of migrations) {
    if (!names.has(migration.name)) continue;
    const present: string[] = [];
    for (const table of migration.TABLES) if (await db.schema.hasTable(table)) present.push(table);
    await assertEmpty(db, migration.name, present);
  }
}

/** Reverts the last batch; returns the names reverted. Refuses, changing nothing, when rows would be lost. */
export async function migrateDown(db: Db): Promise<string[]> {
  await refuseLossyRevert(db);
  const [, reverted] = (await db.migrate.rollback(config())) as [number, string[]];
  return reverted;
}

/** Names of applied and pending migrations. */
export async function migrationStatus(db: Db): Promise<{ applied: string[]; pending: string[] }> {
  const [completed, pending] = (await db.migrate.list(config())) as [Array<{ name: string }>, Migration[]];
  return { applied: completed.map((m) => m.name), pending: pending.map((m) => m.name) };
}
