/**
 * Signing-key rotation and support impersonation (docs/identity.md "Signing keys", "Impersonation"):
 * - `auth_signing_keys`: the rotated access-token signing keys (sealed at rest), each with the
 *   moment it starts signing and, once superseded, the moment it stops verifying; the row `bootstrap`
 *   (no secret) records when the configured `AUTH_JWT_SECRET` stopped verifying;
 * - `refresh_sessions.family_id`: one id for a login and every rotation of its refresh cookie, so an
 *   impersonation can end with the administrator's sign-in;
 * - `impersonations`: who acted as whom, when and until when (the impersonated user lists them);
 * - `agent_audit_log` gains the category `identity` (rotations, impersonation start and end).
 */
import type { Knex } from 'knex';

export const TABLES = ['auth_signing_keys', 'impersonations'] as const;

const CATEGORIES_BEFORE = `'settings', 'servers', 'measurements', 'content', 'sandboxes', 'hosts', 'deletion', 'database'`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table auth_signing_keys (
      kid text primary key constraint auth_signing_keys_kid check (kid ~ '^[A-Za-z0-9_-]{1,64}$'),
      sealed_secret text,
      created_at timestamptz not null default now(),
      activates_at timestamptz not null,
      retires_at timestamptz,
      created_by_user_id bigint
    )`);
  await knex.raw('alter table refresh_sessions add column family_id uuid not null default gen_random_uuid()');
  await knex.raw('create index refresh_sessions_family_id on refresh_sessions (family_id)');
  await knex.raw(`
    create table impersonations (
      id bigserial primary key,
      user_id bigint not null references users(id) on delete cascade,
      admin_user_id bigint not null,
      admin_session uuid not null,
      reason text constraint impersonations_reason check (length(reason) <= 1000),
      actor_ip text constraint impersonations_actor_ip check (length(actor_ip) <= 64),
      started_at timestamptz not null default now(),
      expires_at timestamptz not null,
      ended_at timestamptz,
      uses integer not null default 0,
      last_used_at timestamptz
    )`);
  await knex.raw('create index impersonations_user_id on impersonations (user_id, id desc)');
  await knex.raw('alter table agent_audit_log drop constraint agent_audit_log_category');
  await knex.raw(`alter table agent_audit_log add constraint agent_audit_log_category check (category in (${CATEGORIES_BEFORE}, 'identity'))`);
}

export async function down(knex: Knex): Promise<void> {
  const refuse = (what: string) => {
    throw new Error(`Refusing to revert 20261208010000_identity_signing_keys_impersonation: ${what} would be lost. Remove them first.`);
  };
  if ((await knex('auth_signing_keys').first(knex.raw('1 as present'))) !== undefined) {
    refuse('auth_signing_keys holds rotated signing keys (tokens they signed would stop verifying)');
  }
  if ((await knex('impersonations').first(knex.raw('1 as present'))) !== undefined) refuse('impersonations holds the impersonation history users see');
  if ((await knex('agent_audit_log').where({ category: 'identity' }).first(knex.raw('1 as present'))) !== undefined) {
    refuse("agent_audit_log holds rows of the category 'identity'");
  }
  await knex.raw('alter table agent_audit_log drop constraint agent_audit_log_category');
  await knex.raw(`alter table agent_audit_log add constraint agent_audit_log_category check (category in (${CATEGORIES_BEFORE}))`);
  await knex.schema.dropTable('impersonations');
  await knex.raw('drop index refresh_sessions_family_id');
  await knex.raw('alter table refresh_sessions drop column family_id');
  await knex.schema.dropTable('auth_signing_keys');
}
