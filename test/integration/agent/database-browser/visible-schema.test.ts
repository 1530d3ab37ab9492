/**
 * The visible schema (agent/database-browser/visible-schema.ts) against the migrated database:
 * every visible table and column exists with the declared kind, the declared key is the table's
 * primary key, and the secret columns and excluded tables named in docs/agent-admin.md exist and
 * stay out of it (so the allowlist cannot drift from the migrations unnoticed).
 */
import assert from 'node:assert/strict';
import { VISIBLE_SCHEMA, type ColumnKind } from '../../../../agent/database-browser/visible-schema';
import { freshDatabase, type TestDatabase } from '../../../support/db';

const KIND_OF_TYPE: Record<string, ColumnKind> = {
  text: 'text', 'character varying': 'text', integer: 'integer', bigint: 'integer', 'double precision': 'number', real: 'number',
  numeric: 'number', boolean: 'boolean', 'timestamp with time zone': 'timestamp', date: 'date', uuid: 'uuid', jsonb: 'json', ARRAY: 'text_array',
};

/** Columns that hold secrets or owners' content, and tables left out whole (docs/agent-admin.md "Database browser"). */
const HIDDEN_COLUMNS = [
  'users.password_hash', 'users.email', 'api_keys.key_hash', 'api_keys.prefix', 'agent_grants.token_hash', 'agent_grants.token_prefix',
  'agent_hosts.credential_hash', 'agent_hosts.credential_prefix', 'agent_settings.sealed', 'agent_owner_variables.value', 'agent_jobs.env',
  'agent_turns.prompt', 'agent_turns.result', 'agent_events.payload', 'provider_api_keys.api_key', 'provider_api_keys.key_prefix',
  'provider_api_keys.fingerprint', 'provider_definitions.api_key', 'provider_definitions.api_key_fingerprint', 'provider_route_candidates.api_key',
  'provider_route_candidates.api_key_fingerprint', 'provider_route_candidates.settings', 'provider_route_configs.config', 'provider_route_configs.api_key',
  'provider_route_configs.api_key_fingerprint', 'site_settings.value', 'login_events.email', 'api_logs.user_message_hash', 'api_logs.user_message_text',
  'agent_mcp_connections.credentials_sealed', 'agent_mcp_connections.oauth_sealed', 'agent_mcp_connections.endpoint_url', 'agent_mcp_connectors.secret_hash', 'agent_mcp_connectors.secret_prefix',
  'agent_turn_patches.patch', 'agent_turn_patches.capture_error', 'agent_turn_patches.publish_error',
];
const HIDDEN_TABLES = ['public_stats_snapshots', 'email_outbox', 'email_verifications', 'refresh_sessions', 'disabled_provider_env_keys', 'provider_env_key_min_roles', 'knex_migrations_lock', 'agent_mcp_credentials', 'agent_mcp_oauth_states'];

describe('database browser: visible schema against the migrations (PostgreSQL)', () => {
  let t: TestDatabase;
  const columns = new Map<string, string>();
  const keys = new Map<string, string[]>();

  before(async () => {
    t = await freshDatabase();
    const found = await t.db.raw<{ rows: Array<{ table_name: string; column_name: string; data_type: string }> }>(
      "select table_name, column_name, data_type from information_schema.columns where table_schema = 'public'",
    );
    for (const row of found.rows) columns.set(`${row.table_name}.${row.column_name}`, row.data_type);
    const pks = await t.db.raw<{ rows: Array<{ table_name: string; column_name: string }> }>(
      `select tc.table_name, kcu.column_name from information_schema.table_constraints tc
       join information_schema.key_column_usage kcu using (constraint_schema, constraint_name, table_name)
       where tc.constraint_type = 'PRIMARY KEY' and tc.table_schema = 'public' order by tc.table_name, kcu.ordinal_position`,
    );
    for (const row of pks.rows) keys.set(row.table_name, [...(keys.get(row.table_name) ?? []), row.column_name]);
  });
  after(async () => {
    await t?.drop();
  });

  it('lists only tables and columns that exist, each with the kind of its type, keyed by its primary key', () => {
    for (const [table, visible] of VISIBLE_SCHEMA) {
      assert.deepEqual(visible.key, keys.get(table), `${table}: primary key`);
      for (const [column, kind] of Object.entries(visible.columns)) {
        const type = columns.get(`${table}.${column}`);
        assert.ok(type, `${table}.${column} exists`);
        assert.equal(KIND_OF_TYPE[type], kind, `${table}.${column} (${type})`);
      }
    }
  });

  it('keeps the secret columns and the excluded tables out (they exist, so the names are right)', () => {
    for (const hidden of HIDDEN_COLUMNS) {
      const [table, column] = hidden.split('.') as [string, string];
      assert.ok(columns.has(hidden), `${hidden} exists`);
      assert.ok(VISIBLE_SCHEMA.has(table), `${table} is visible`);
      assert.equal(Object.hasOwn(VISIBLE_SCHEMA.get(table)!.columns, column), false, `${hidden} is hidden`);
    }
    for (const table of HIDDEN_TABLES) {
      assert.ok([...columns.keys()].some((c) => c.startsWith(`${table}.`)), `${table} exists`);
      assert.equal(VISIBLE_SCHEMA.has(table), false, `${table} is left out`);
    }
  });
});
