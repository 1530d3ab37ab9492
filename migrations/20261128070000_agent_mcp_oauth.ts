/**
 * OAuth for remote MCP connections (docs/mcp.md "OAuth"): the flow's states (stored as SHA-256,
 * bound to the owner and the connection, 10 minutes, consumed once, with the sealed PKCE verifier
 * and client registration), and the connection's sealed OAuth grant (tokens, client, server).
 */
import type { Knex } from 'knex';
import { assertEmpty } from './support';

const MIGRATION = '20261128070000_agent_mcp_oauth';
export const TABLES = ['agent_mcp_oauth_states'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_mcp_oauth_states', (t) => {
    t.text('state_hash').primary();
    t.bigInteger('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('connection_id').notNullable().references('connection_id').inTable('agent_mcp_connections').onDelete('CASCADE');
    t.text('flow_sealed').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('consumed_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['expires_at']);
  });
  await knex.schema.alterTable('agent_mcp_connections', (t) => {
    t.text('oauth_sealed').nullable();
    t.timestamp('oauth_expires_at', { useTz: true }).nullable();
    t.timestamp('oauth_authorized_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await assertEmpty(knex, MIGRATION, TABLES);
  await knex.schema.alterTable('agent_mcp_connections', (t) => {
    t.dropColumn('oauth_sealed');
    t.dropColumn('oauth_expires_at');
    t.dropColumn('oauth_authorized_at');
  });
  await knex.schema.dropTable('agent_mcp_oauth_states');
}
