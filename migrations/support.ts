/**
 * Helpers shared by migrations.
 */
import type { Knex } from 'knex';

/** Throws, naming the migration and table, when any of `tables` holds a row. */
export async function assertEmpty(knex: Knex, migration: string, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    const row: unknown = await knex(table).first(knex.raw('1 as present'));
    if (row !== undefined) {
      throw new Error(`Refusing to revert ${migration}: table ${table} holds rows that would be lost. Empty it first.`);
    }
  }
}

/** Drops `tables` (in order), refusing with a clear message while any of them holds rows. */
export async function dropTablesRefusingRows(knex: Knex, migration: string, tables: readonly string[]): Promise<void> {
  await assertEmpty(knex, migration, tables);
  for (const table of tables) await knex.schema.dropTable(table);
}
