/**
 * Request log (issue item 6): `api_logs` gains the columns the batching writer fills and the
 * automation score reads (a per-row idempotency key, the synthetic marker, and the newest user
 * message's length, entropy and hash), and `provider_hourly_stats` holds hourly aggregates per
 * provider, model and endpoint (purged after 30 days by the writer).
 */
import type { Knex } from 'knex';

export const TABLES = ['provider_hourly_stats'] as const;

/** Columns this migration adds to `api_logs`. */
const API_LOG_COLUMNS = ['log_id', 'synthetic', 'user_message_chars', 'user_message_entropy', 'user_message_hash'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_logs', (t) => {
    // Written by the gateway for each row so a replayed batch (spool, retried insert) adds nothing twice.
    t.uuid('log_id').nullable();
    t.boolean('synthetic').notNullable().defaultTo(false);
    t.integer('user_message_chars').nullable();
    t.float('user_message_entropy').nullable();
    t.text('user_message_hash').nullable();
  });
  await knex.raw('create unique index api_logs_log_id_unique on api_logs (log_id)');
  await knex.raw('create index api_logs_errors_created_at on api_logs (created_at) where status >= 400 or error_code is not null');

  await knex.schema.createTable('provider_hourly_stats', (t) => {
    t.timestamp('hour', { useTz: true }).notNullable();
    // Empty string when the row had none (a primary key cannot hold nulls).
    t.text('provider').notNullable();
    t.text('model').notNullable();
    t.text('endpoint_id').notNullable();
    t.bigInteger('requests').notNullable().defaultTo(0);
    t.bigInteger('errors').notNullable().defaultTo(0);
    t.bigInteger('prompt_tokens').notNullable().defaultTo(0);
    t.bigInteger('completion_tokens').notNullable().defaultTo(0);
    t.bigInteger('cache_read_tokens').notNullable().defaultTo(0);
    t.decimal('cost_usd', 20, 9).notNullable().defaultTo(0);
    t.bigInteger('latency_ms_sum').notNullable().defaultTo(0);
    t.primary(['hour', 'provider', 'model', 'endpoint_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  const stats: unknown = await knex('provider_hourly_stats').first(knex.raw('1 as present'));
  if (stats !== undefined) {
    throw new Error('Refusing to revert 20261121020000_request_log: table provider_hourly_stats holds rows that would be lost. Empty it first.');
  }
  const filled: unknown = await knex('api_logs')
    .where('synthetic', true).orWhereNotNull('user_message_chars').orWhereNotNull('user_message_hash')
    .first(knex.raw('1 as present'));
  if (filled !== undefined) {
    throw new Error('Refusing to revert 20261121020000_request_log: api_logs rows hold user-message or synthetic columns that would be lost. Empty api_logs first.');
  }
  await knex.schema.dropTable('provider_hourly_stats');
  await knex.raw('drop index if exists api_logs_errors_created_at');
  await knex.raw('drop index if exists api_logs_log_id_unique');
  await knex.schema.alterTable('api_logs', (t) => {
    for (const column of API_LOG_COLUMNS) t.dropColumn(column);
  });
}
