/**
 * Public stats (docs/public-stats.md): `public_stats_snapshots` holds the snapshots the daily job
 * writes (the 30 newest are kept; `GET /public-stats` serves the newest), and `api_logs` gains
 * `user_message_text`, the newest user message's text, written only with
 * `DB_STORE_FULL_CONTENT=true` and read by the snapshot's language section.
 */
import type { Knex } from 'knex';

export const TABLES = ['public_stats_snapshots'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('public_stats_snapshots', (t) => {
    t.bigIncrements('id').primary();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.integer('window_weeks').notNullable();
    t.jsonb('content').notNullable();
  });
  await knex.raw('alter table public_stats_snapshots add constraint public_stats_snapshots_window_weeks_range check (window_weeks between 1 and 520)');
  await knex.schema.alterTable('api_logs', (t) => {
    t.text('user_message_text').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  const snapshots: unknown = await knex('public_stats_snapshots').first(knex.raw('1 as present'));
  if (snapshots !== undefined) {
    throw new Error('Refusing to revert 20261207120000_public_stats: table public_stats_snapshots holds snapshots that would be lost. Empty it first.');
  }
  const texts: unknown = await knex('api_logs').whereNotNull('user_message_text').first(knex.raw('1 as present'));
  if (texts !== undefined) {
    throw new Error('Refusing to revert 20261207120000_public_stats: api_logs rows hold user_message_text that would be lost. Set it to null first.');
  }
  await knex.schema.alterTable('api_logs', (t) => {
    t.dropColumn('user_message_text');
  });
  await knex.schema.dropTable('public_stats_snapshots');
}
