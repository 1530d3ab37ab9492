/**
 * What the inventory reconciler learns from each host's container report (only the latest resource
 * observation is kept; docs/sandboxes.md "Reconciler"): the latest resource reading
 * of each group's container, the orphan containers a host holds (labelled for it, matching no live
 * group) from first sight to removal, and per-day running time of each group for the owners' usage
 * page. `down` refuses while any of it holds data (orphan history, usage, a reading).
 */
import type { Knex } from 'knex';
import { assertEmpty } from './support';

export const TABLES = ['agent_sandbox_orphans', 'agent_sandbox_usage_daily'] as const;

const MIGRATION = '20261125050000_agent_sandbox_observations';

const DOCKER_STATES = `'created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead'`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_sandboxes', (t) => {
    /** When the host last reported this group's recorded container (database clock); null: never. */
    t.timestamp('observed_at', { useTz: true }).nullable();
    /** The container's Docker state in that report (`running`, `exited`, …). */
    t.text('observed_state').nullable();
    /** CPU use in percent of one CPU (200 = two CPUs busy); null when not running or not measured. */
    t.double('observed_cpu_percent').nullable();
    /** Memory in use (without the page cache), bytes; null when not running. */
    t.bigInteger('observed_memory_bytes').nullable();
    /** Bytes written to the container's own layer (`SizeRw`: the workspace and homes), measured less often. */
    t.bigInteger('observed_disk_bytes').nullable();
  });
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_observed_state_check check (observed_state in (${DOCKER_STATES}))`);

  await knex.raw(`
    create table agent_sandbox_orphans (
      host_id text not null,
      container_id text not null,
      container_name text not null,
      /** The group and generation labels as found (null: none). */
      group_id text,
      generation text,
      /** Why it matches no live group: no_group, group_deleted, other_host, other_container. */
      reason text not null constraint agent_sandbox_orphans_reason check (reason in ('no_group', 'group_deleted', 'other_host', 'other_container')),
      first_seen_at timestamptz not null,
      last_seen_at timestamptz not null,
      /** When the API first told the host to remove it (after the grace period). */
      removal_ordered_at timestamptz,
      /** When a report first no longer showed it. */
      removed_at timestamptz,
      primary key (host_id, container_id)
    )
  `);
  await knex.raw('create index agent_sandbox_orphans_open on agent_sandbox_orphans (host_id) where removed_at is null');

  await knex.raw(`
    create table agent_sandbox_usage_daily (
      group_id text not null references agent_sandboxes (group_id) on delete cascade,
      day date not null,
      owner_id bigint not null references users (id) on delete cascade,
      running_seconds double precision not null default 0 constraint agent_sandbox_usage_daily_seconds check (running_seconds >= 0 and running_seconds <= 86400),
      primary key (group_id, day)
    )
  `);
  await knex.raw('create index agent_sandbox_usage_daily_owner on agent_sandbox_usage_daily (owner_id, day)');
}

export async function down(knex: Knex): Promise<void> {
  await assertEmpty(knex, MIGRATION, TABLES);
  const observed: unknown = await knex('agent_sandboxes').whereNotNull('observed_at').first(knex.raw('1 as present'));
  if (observed !== undefined) {
    throw new Error(`Refusing to revert ${MIGRATION}: agent_sandboxes holds resource observations that would be lost. Clear observed_at first.`);
  }
  await knex.schema.dropTable('agent_sandbox_usage_daily');
  await knex.schema.dropTable('agent_sandbox_orphans');
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_observed_state_check');
  await knex.schema.alterTable('agent_sandboxes', (t) => {
    t.dropColumns('observed_at', 'observed_state', 'observed_cpu_percent', 'observed_memory_bytes', 'observed_disk_bytes');
  });
}
