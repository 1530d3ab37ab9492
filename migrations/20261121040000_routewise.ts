/**
 * The routewise strategy's stored state: `routewise_probe_leases`, one lease row per
 * model so two gateway workers never probe one model's endpoints at the same time. A lease is
 * held by `holder` until `expires_at` (database time); an expired row is taken over in place.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['routewise_probe_leases'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('routewise_probe_leases', (t) => {
    t.text('model_id').primary();
    t.text('holder').notNullable();
    t.timestamp('acquired_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, '20261121040000_routewise', TABLES);
}
