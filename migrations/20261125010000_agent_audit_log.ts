/**
 * The agent audit log (`GET /admin/agent/audit-log`; docs/agent-audit.md): one
 * append-only row per administrator or system action on the agent platform, written by
 * agent/audit/audit-log.ts only. Rows name administrators by user id (never e-mail) and carry no
 * foreign key, so deleting a user, host or chat never deletes or blocks its history. The
 * constraints restate the writer's rules, so a row written by any other path obeys them too.
 * `down` refuses while rows exist: the audit trail is not thrown away by a rollback.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['agent_audit_log'] as const;

const MIGRATION = '20261125010000_agent_audit_log';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table agent_audit_log (
      id bigserial primary key,
      created_at timestamptz not null default now(),
      category text not null
        constraint agent_audit_log_category check (category in ('settings', 'servers', 'measurements', 'content', 'sandboxes', 'hosts', 'deletion', 'database')),
      action text not null
        constraint agent_audit_log_action check (action ~ '^agent(\\.[a-z0-9_]+)+$' and length(action) <= 128),
      source text not null constraint agent_audit_log_source check (source in ('admin', 'system')),
      actor_type text not null constraint agent_audit_log_actor_type check (actor_type in ('user', 'admin_token', 'system')),
      actor_user_id bigint,
      actor_name text constraint agent_audit_log_actor_name check (actor_name ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
      actor_ip text constraint agent_audit_log_actor_ip check (length(actor_ip) <= 64),
      target_type text constraint agent_audit_log_target_type check (target_type ~ '^[a-z][a-z0-9_]{0,31}$'),
      target_id text constraint agent_audit_log_target_id check (length(target_id) <= 256),
      reason text constraint agent_audit_log_reason check (length(reason) <= 1000),
      outcome text not null constraint agent_audit_log_outcome check (outcome in ('succeeded', 'requested', 'refused', 'failed')),
      details jsonb not null default '{}'::jsonb
        constraint agent_audit_log_details check (jsonb_typeof(details) = 'object' and octet_length(details::text) <= 16384),
      constraint agent_audit_log_actor check (
        (actor_type = 'user') = (actor_user_id is not null)
        and (actor_type = 'system') = (actor_name is not null)
        and (actor_type = 'system') = (source = 'system')
      ),
      constraint agent_audit_log_target check ((target_type is null) = (target_id is null))
    )
  `);
  // Newest first over everything (the primary key), newest first within one category, and one
  // target's history (a sandbox's or host's rows, for the sandbox and host views).
  await knex.raw('create index agent_audit_log_category_id on agent_audit_log (category, id desc)');
  await knex.raw('create index agent_audit_log_target_id on agent_audit_log (target_type, target_id, id desc) where target_type is not null');
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
