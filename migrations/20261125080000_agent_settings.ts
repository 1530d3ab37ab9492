/**
 * Admin settings of the agent platform (stored in the agent database, edited through
 * `GET, PUT /admin/agent/settings`, synced to every process every 5 seconds; docs/agent-admin.md
 * "Settings"). One row per saved key: `value` (JSON) for plain settings, `sealed` (encrypted with
 * `AGENT_SETTINGS_ENCRYPTION_KEY`, lib/sealed-secret.ts) for credential fields. A key without a row
 * has its default. `agent_settings_state` is the change marker every process polls: the first save
 * creates its one row, and each saving transaction increments its `revision` (no row: revision 0).
 */
import type { Knex } from 'knex';

export const TABLES = ['agent_settings', 'agent_settings_state'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_settings', (t) => {
    t.text('key').primary();
    t.jsonb('value').nullable();
    t.text('sealed').nullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`alter table agent_settings add constraint agent_settings_key_check check (key ~ '^[a-z][a-z0-9_]{0,63}$')`);
  await knex.raw('alter table agent_settings add constraint agent_settings_one_value check ((value is null) <> (sealed is null))');
  await knex.schema.createTable('agent_settings_state', (t) => {
    t.boolean('singleton').primary().defaultTo(true);
    t.bigInteger('revision').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('alter table agent_settings_state add constraint agent_settings_state_singleton check (singleton)');
}

/** Refuses while settings are saved: reverting would silently return every process to its environment defaults. */
export async function down(knex: Knex): Promise<void> {
  const saved: unknown = await knex('agent_settings').first(knex.raw('1 as present'));
  if (saved !== undefined) {
    throw new Error('Refusing to revert 20261125080000_agent_settings: agent_settings holds saved admin settings. Reset them (PUT /admin/agent/settings with null values) first.');
  }
  await knex.schema.dropTable('agent_settings_state');
  await knex.schema.dropTable('agent_settings');
}
