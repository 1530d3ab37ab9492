/**
 * Owners' source-control accounts (docs/source-control.md): `agent_github_accounts` holds one
 * linked account per owner, provider and provider account, with its user tokens sealed under
 * `AGENT_SOURCE_CONTROL_ENCRYPTION_KEY` (never in clear), their expiries, and the refresh lease
 * (`refresh_holder`, `refresh_lease_until`) that lets one API replica spend the single-use refresh
 * token while the others wait. `agent_repo_grants` lists the repositories the account's connection
 * may access (entitlement at job creation). `agent_source_control_oauth_states` keeps each OAuth
 * state as its SHA-256 only, bound to one user and provider, with the PKCE verifier sealed.
 */
import type { Knex } from 'knex';

export const TABLES = ['agent_github_accounts', 'agent_repo_grants', 'agent_source_control_oauth_states'] as const;

const PROVIDERS = `('github', 'gitea')`;

async function createAccounts(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_github_accounts', (t) => {
    t.text('account_id').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.text('provider_account_id').notNullable();
    t.text('login').notNullable();
    t.text('access_token_sealed').notNullable();
    /** Null: the provider issued a token that does not expire. */
    t.timestamp('access_token_expires_at', { useTz: true }).nullable();
    t.text('refresh_token_sealed').nullable();
    t.timestamp('refresh_token_expires_at', { useTz: true }).nullable();
    t.text('scopes').notNullable().defaultTo('');
    /** Set when a refresh was refused (expired or revoked): the owner must link the account again. */
    t.timestamp('needs_relink_at', { useTz: true }).nullable();
    t.text('relink_reason').nullable();
    t.text('refresh_holder').nullable();
    t.timestamp('refresh_lease_until', { useTz: true }).nullable();
    t.timestamp('grants_refreshed_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'provider', 'provider_account_id']);
  });
  await knex.raw(`alter table agent_github_accounts add constraint agent_github_accounts_provider_check check (provider in ${PROVIDERS})`);
}

export async function up(knex: Knex): Promise<void> {
  await createAccounts(knex);
  await knex.schema.createTable('agent_repo_grants', (t) => {
    t.text('account_id').notNullable().references('agent_github_accounts.account_id').onDelete('CASCADE');
    /** `owner/name` as the provider names it. */
    t.text('repo_full_name').notNullable();
    /** The repository's web URL on the provider. */
    t.text('repo_url').notNullable();
    t.jsonb('permissions').notNullable().defaultTo('{}');
    t.timestamp('refreshed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['account_id', 'repo_full_name']);
  });
  await knex.schema.createTable('agent_source_control_oauth_states', (t) => {
    /** Hex SHA-256 of the state: the state itself is never stored. */
    t.text('state_hash').primary();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.text('pkce_verifier_sealed').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('consumed_at', { useTz: true }).nullable();
    t.index(['expires_at']);
  });
  await knex.raw(`alter table agent_source_control_oauth_states add constraint agent_source_control_oauth_states_provider_check check (provider in ${PROVIDERS})`);
}

/** Refuses while an account is linked: reverting would silently unlink every owner. */
export async function down(knex: Knex): Promise<void> {
  const linked: unknown = await knex('agent_github_accounts').first(knex.raw('1 as present'));
  if (linked !== undefined) {
    throw new Error('Refusing to revert 20261128040000_agent_source_control_accounts: owners have linked source-control accounts. Unlink them first.');
  }
  await knex.schema.dropTable('agent_source_control_oauth_states');
  await knex.schema.dropTable('agent_repo_grants');
  await knex.schema.dropTable('agent_github_accounts');
}
