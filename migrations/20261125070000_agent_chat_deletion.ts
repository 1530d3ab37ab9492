/**
 * Permanent chat deletion (docs/chat-deletion.md): one request per chat
 * whose owner asked for permanent deletion after a soft delete. The deletion sweep takes due
 * requests one at a time, purges the chat's records and, when it was the last chat of its sandbox
 * group, stops and deletes the group's container. The row outlives the chat it names (no foreign
 * key: the chat's rows are what it deletes), so it also records that the deletion happened.
 *
 * States: `pending` (never tried) → `running` (claimed by a sweep until `lease_expires_at`) →
 * `done`, or `failed` (the last attempt failed; tried again from `next_attempt_at`, forever).
 * `down` refuses while requests exist: a rollback must not forget a deletion in progress.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['agent_deletion_requests'] as const;

const MIGRATION = '20261125070000_agent_chat_deletion';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table agent_deletion_requests (
      id text primary key,
      job_id text not null unique,
      owner_id bigint not null,
      -- The chat's sandbox group when the deletion was requested (null: the chat never ran).
      group_id text,
      state text not null default 'pending'
        constraint agent_deletion_requests_state check (state in ('pending', 'running', 'done', 'failed')),
      -- Attempts started so far; also the fence of a claim (a stale sweep's writes change nothing).
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      -- Until when a running attempt holds the request; after it, another sweep may take it again.
      lease_expires_at timestamptz,
      last_error text constraint agent_deletion_requests_last_error check (length(last_error) <= 2000),
      -- When the chat's records were purged (the sandbox part may still be pending).
      purged_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      finished_at timestamptz,
      constraint agent_deletion_requests_lease check ((state = 'running') = (lease_expires_at is not null)),
      constraint agent_deletion_requests_done check ((state = 'done') = (finished_at is not null))
    )
  `);
  // The sweep's claim: due requests in order (done ones never again).
  await knex.raw(`create index agent_deletion_requests_due on agent_deletion_requests (next_attempt_at) where state in ('pending', 'failed')`);
  await knex.raw(`create index agent_deletion_requests_lease on agent_deletion_requests (lease_expires_at) where state = 'running'`);
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
