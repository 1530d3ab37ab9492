/**
 * Stored runtime configuration (written by the admin API, re-applied over the files at every
 * start): custom providers, provider keys and their tier reservations, disabled providers and
 * environment keys, runtime routes, retarget overrides of registry routes, weight overrides,
 * visibility overrides and concurrency exemptions. Strategy overrides, required-role markers,
 * runtime model definitions and offload policies live in `site_settings`. Provider secrets are
 * stored for upstream calls and never returned by the API.
 */
import type { Knex } from 'knex';

export const TABLES = [
  'model_concurrency_exemptions', 'model_visibility_overrides', 'provider_weight_overrides', 'provider_route_configs',
  'provider_route_candidates', 'disabled_providers', 'provider_env_key_min_roles', 'disabled_provider_env_keys',
  'provider_api_keys', 'provider_definitions',
] as const;

const ROLE_CHECK = `in ('free', 'pro', 'internal', 'admin')`;

function timestamps(knex: Knex, t: Knex.CreateTableBuilder): void {
  t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
}

async function providerTables(knex: Knex): Promise<void> {
  await knex.schema.createTable('provider_definitions', (t) => {
    t.text('slug').primary();
    t.text('display_name').notNullable();
    t.text('kind').notNullable().defaultTo('generic_compat');
    t.text('base_url').notNullable();
    t.text('api_key').nullable();
    t.text('api_key_fingerprint').nullable();
    timestamps(knex, t);
  });
  await knex.schema.createTable('provider_api_keys', (t) => {
    t.bigIncrements('id').primary();
    t.text('provider').notNullable();
    t.text('label').nullable();
    t.text('api_key').notNullable();
    t.text('key_prefix').notNullable();
    t.text('fingerprint').notNullable();
    t.text('min_role').nullable();
    t.timestamp('disabled_at', { useTz: true }).nullable();
    timestamps(knex, t);
    t.unique(['provider', 'fingerprint']);
  });
  await knex.raw(`alter table provider_api_keys add constraint provider_api_keys_min_role_check check (min_role is null or min_role ${ROLE_CHECK})`);
  await knex.schema.createTable('disabled_provider_env_keys', (t) => {
    t.text('provider').notNullable();
    t.text('fingerprint').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'fingerprint']);
  });
  await knex.schema.createTable('provider_env_key_min_roles', (t) => {
    t.text('provider').notNullable();
    t.text('fingerprint').notNullable();
    t.text('min_role').notNullable();
    timestamps(knex, t);
    t.primary(['provider', 'fingerprint']);
  });
  await knex.raw(`alter table provider_env_key_min_roles add constraint provider_env_key_min_roles_check check (min_role ${ROLE_CHECK})`);
  await knex.schema.createTable('disabled_providers', (t) => {
    t.text('provider').primary();
    t.text('reason').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

async function routingTables(knex: Knex): Promise<void> {
  await knex.schema.createTable('provider_route_candidates', (t) => {
    t.bigIncrements('id').primary();
    t.text('model_id').notNullable();
    t.text('provider').nullable();
    t.text('kind').notNullable();
    t.text('base_url').nullable();
    t.text('api_key').nullable();
    t.text('api_key_fingerprint').nullable();
    t.text('provider_model_id').nullable();
    t.double('weight').notNullable().defaultTo(1);
    t.jsonb('settings').notNullable().defaultTo('{}');
    timestamps(knex, t);
    t.index(['model_id']);
  });
  await knex.raw('alter table provider_route_candidates add constraint provider_route_candidates_weight_check check (weight >= 0)');
  await knex.schema.createTable('provider_route_configs', (t) => {
    t.text('model_id').notNullable();
    t.text('route_id').notNullable();
    t.jsonb('config').notNullable();
    t.text('api_key').nullable();
    t.text('api_key_fingerprint').nullable();
    timestamps(knex, t);
    t.primary(['model_id', 'route_id']);
  });
  await knex.schema.createTable('provider_weight_overrides', (t) => {
    t.text('model_id').notNullable();
    t.text('endpoint_id').notNullable();
    t.double('weight').notNullable();
    timestamps(knex, t);
    t.primary(['model_id', 'endpoint_id']);
  });
  await knex.raw('alter table provider_weight_overrides add constraint provider_weight_overrides_weight_check check (weight >= 0)');
  await knex.schema.createTable('model_visibility_overrides', (t) => {
    t.text('model_id').primary();
    t.text('required_role').notNullable();
    timestamps(knex, t);
  });
  await knex.raw(`alter table model_visibility_overrides add constraint model_visibility_overrides_role_check check (required_role ${ROLE_CHECK})`);
  await knex.schema.createTable('model_concurrency_exemptions', (t) => {
    t.text('model_id').primary();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function up(knex: Knex): Promise<void> {
  await providerTables(knex);
  await routingTables(knex);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    const row: unknown = await knex(table).first(knex.raw('1 as present'));
    if (row !== undefined) {
      throw new Error(`Refusing to revert 20261121030000_runtime_config: table ${table} holds rows that would be lost. Empty it first.`);
    }
  }
  for (const table of TABLES) await knex.schema.dropTable(table);
}
