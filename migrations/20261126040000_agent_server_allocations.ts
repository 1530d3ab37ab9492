/**
 * Server allocations (`DELETE /admin/agent/servers/<allocation_id>` with
 * `{expected_revision: N}`; docs/agent-hosts.md "Server allocations"): one row records that an
 * execution server is allocated to the agent platform as one enrolled host. `state` goes
 * `active` → `releasing` (its host drains) → `released` (its host removed); `revision` starts at 1
 * and grows by one on every change of the row, so an operator's DELETE names the revision it saw.
 * At most one allocation per host is not `released` (a partial unique index). The host foreign key
 * RESTRICTs: a host named by an allocation is tombstoned on removal, never deleted, so the
 * allocation's history keeps naming it. `down` refuses while rows exist.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

export const TABLES = ['agent_server_allocations'] as const;

const MIGRATION = '20261126040000_agent_server_allocations';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table agent_server_allocations (
      id bigserial primary key,
      host_id text not null references agent_hosts (host_id) on delete restrict,
      label text constraint agent_server_allocations_label check (char_length(label) between 1 and 200),
      state text not null default 'active'
        constraint agent_server_allocations_state check (state in ('active', 'releasing', 'released')),
      revision integer not null default 1 constraint agent_server_allocations_revision check (revision >= 1),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      release_requested_at timestamptz,
      released_at timestamptz,
      created_by jsonb not null,
      released_by jsonb,
      constraint agent_server_allocations_released check ((state = 'released') = (released_at is not null)),
      constraint agent_server_allocations_release_requested check ((state = 'active') = (release_requested_at is null))
    )
  `);
  // One allocation holds a host at a time; released ones are history.
  await knex.raw(`create unique index agent_server_allocations_one_per_host on agent_server_allocations (host_id) where state <> 'released'`);
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
