/**
 * MCP tools (issue 34; docs/mcp.md): an owner's tool connections (`agent_mcp_connections`), which
 * connections a chat may use (`agent_mcp_bindings`), bindings by server name that no single
 * connection answers (`agent_mcp_legacy_bindings`, reasons `no_connection` / `ambiguous_connection`),
 * the owner's approvals of tools per chat, recorded with the residency generation they were given in
 * (`agent_mcp_approvals`), the tool relay's credentials (`agent_mcp_credentials`: the attempt-fenced
 * `mcp` token and the `amr.` residency credential, stored as digests), and connectors
 * (`agent_mcp_connectors`: a user's machine registration, its secret stored as a digest).
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

const MIGRATION = '20261128050000_agent_mcp';
export const TABLES = [
  'agent_mcp_credentials', 'agent_mcp_approvals', 'agent_mcp_legacy_bindings', 'agent_mcp_bindings', 'agent_mcp_connections', 'agent_mcp_connectors',
] as const;

async function connectorsAndConnections(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_mcp_connectors', (t) => {
    t.text('connector_id').primary();
    t.bigInteger('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('name').notNullable();
    /** SHA-256 of the once-returned secret, and its visible prefix. */
    t.text('secret_hash').notNullable().unique();
    t.text('secret_prefix').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.index(['owner_id']);
  });
  await knex.schema.createTable('agent_mcp_connections', (t) => {
    t.text('connection_id').primary();
    t.bigInteger('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    /** Unique per owner; the prefix of its tools' names as the model sees them. */
    t.text('name').notNullable();
    /** `streamable_http` or `stdio`. */
    t.text('transport').notNullable();
    /** `remote` (a URL), `control_plane` (a stdio template the relay launches) or `connector` (a user's machine). */
    t.text('location').notNullable();
    /** How it was given: `url`, `mcp_servers` (an imported snippet) or `stdio`. */
    t.text('source').notNullable();
    t.text('endpoint_url').nullable();
    /** The stdio launch specification: `{command, args}` as given (a template's). */
    t.jsonb('launch').nullable();
    /** The operator-approved stdio template it runs (`AGENT_MCP_STDIO_TEMPLATES`). */
    t.text('template').nullable();
    /** `none`, `bearer` (an Authorization header) or `headers` (several headers). */
    t.text('auth_profile').notNullable().defaultTo('none');
    /** Sealed JSON `{headers, env}` (AGENT_SETTINGS_ENCRYPTION_KEY); never returned. */
    t.text('credentials_sealed').nullable();
    /** Names of the header and environment values held (values are write-only). */
    t.jsonb('credential_names').notNullable().defaultTo('{"headers":[],"env":[]}');
    /** `none` (bound = usable) or `required` (each tool approved per chat). */
    t.text('approval_policy').notNullable().defaultTo('none');
    t.text('connector_id').nullable().references('agent_mcp_connectors.connector_id').onDelete('SET NULL');
    /** The capability snapshot of the last discovery (tools), bounded and cleaned. */
    t.jsonb('capabilities').nullable();
    t.timestamp('discovered_at', { useTz: true }).nullable();
    t.text('discovery_error').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['owner_id', 'name']);
  });
  await knex.raw(`alter table agent_mcp_connections add constraint agent_mcp_connections_kind_check check (
    transport in ('streamable_http', 'stdio') and location in ('remote', 'control_plane', 'connector')
    and source in ('url', 'mcp_servers', 'stdio') and auth_profile in ('none', 'bearer', 'headers') and approval_policy in ('none', 'required'))`);
}

async function chatTables(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_mcp_bindings', (t) => {
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.text('connection_id').notNullable().references('agent_mcp_connections.connection_id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['job_id', 'connection_id']);
    t.index(['connection_id']);
  });
  await knex.schema.createTable('agent_mcp_legacy_bindings', (t) => {
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    /** The server name the binding asked for. */
    t.text('server_name').notNullable();
    /** `no_connection` (no connection of the owner has the name) or `ambiguous_connection` (several do). */
    t.text('reason').notNullable();
    /** The connection ids that matched (ambiguous), else empty. */
    t.jsonb('candidates').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['job_id', 'server_name']);
  });
  await knex.raw(`alter table agent_mcp_legacy_bindings add constraint agent_mcp_legacy_bindings_reason_check check (reason in ('no_connection', 'ambiguous_connection'))`);
  await knex.schema.createTable('agent_mcp_approvals', (t) => {
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.text('connection_id').notNullable().references('agent_mcp_connections.connection_id').onDelete('CASCADE');
    /** The tool's own name at the server. */
    t.text('tool_name').notNullable();
    /** The residency generation (the chat's sandbox generation) the approval was asked or given in; null before the chat had a sandbox. */
    t.integer('generation').nullable();
    /** `pending` (the relay asked) → `approved` | `denied` (the owner decided). */
    t.text('state').notNullable();
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('decided_at', { useTz: true }).nullable();
    t.bigInteger('decided_by').nullable();
    t.primary(['job_id', 'connection_id', 'tool_name']);
  });
  await knex.raw(`alter table agent_mcp_approvals add constraint agent_mcp_approvals_state_check check (state in ('pending', 'approved', 'denied'))`);
  await knex.schema.createTable('agent_mcp_credentials', (t) => {
    /** `mcp:<attempt_id>` for the attempt-fenced token, `amr:<job_id>` for the residency credential. */
    t.text('credential_id').primary();
    /** `mcp` or `residency`. */
    t.text('kind').notNullable();
    t.text('token_hash').notNullable().unique();
    t.text('token_prefix').notNullable();
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    /** The attempt it was issued for (the `mcp` token is valid for this attempt only). */
    t.text('attempt_id').notNullable();
    t.text('host_id').notNullable();
    t.text('group_id').notNullable();
    t.integer('generation').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['job_id']);
  });
  await knex.raw(`alter table agent_mcp_credentials add constraint agent_mcp_credentials_kind_check check (kind in ('mcp', 'residency'))`);
}

export async function up(knex: Knex): Promise<void> {
  await connectorsAndConnections(knex);
  await chatTables(knex);
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
