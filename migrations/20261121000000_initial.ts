/**
 * Initial schema: runtime settings, the request log and enrolled execution hosts.
 * Later migrations add identity, runtime routing state and the agent tables.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['agent_hosts', 'api_logs', 'site_settings'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('site_settings', (t) => {
    t.text('key').primary();
    t.jsonb('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('api_logs', (t) => {
    t.bigIncrements('id').primary();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('request_id').notNullable();
    t.bigInteger('user_id').nullable();
    t.bigInteger('api_key_id').nullable();
    t.text('model').nullable();
    t.text('provider').nullable();
    t.text('endpoint_id').nullable();
    t.text('surface').notNullable();
    t.integer('status').notNullable();
    t.boolean('stream').notNullable().defaultTo(false);
    t.integer('latency_ms').nullable();
    t.integer('first_token_ms').nullable();
    t.integer('prompt_tokens').nullable();
    t.integer('completion_tokens').nullable();
    t.integer('cache_read_tokens').nullable();
    t.integer('num_user_turns').nullable();
    t.integer('num_tool_calls').nullable();
    t.decimal('cost_usd', 18, 9).nullable();
    t.text('error_code').nullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.index(['created_at']);
    t.index(['user_id', 'created_at']);
  });

  await knex.schema.createTable('agent_hosts', (t) => {
    t.text('host_id').primary();
    t.text('credential_hash').notNullable();
    t.text('credential_prefix').notNullable();
    t.integer('slots_saved').nullable();
    t.integer('slots_total').nullable();
    t.text('runtime').nullable();
    t.text('runner_version').nullable();
    t.jsonb('capabilities').notNullable().defaultTo('[]');
    t.timestamp('enrolled_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_heartbeat_at', { useTz: true }).nullable();
    t.timestamp('removal_requested_at', { useTz: true }).nullable();
  });
  await knex.raw('alter table agent_hosts add constraint agent_hosts_slots_saved_range check (slots_saved is null or slots_saved between 2 and 128)');
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, '20261121000000_initial', TABLES);
}
