/**
 * Guarded host removal drains (docs/agent-hosts.md "Removal"): `DELETE
 * /admin/agent/runner-hosts/<host>` on a host that still holds work sets
 * `agent_hosts.removal_requested_at` (a column since the initial migration, which placement
 * already reads: no new work goes there) and the host workflow removes the host once nothing
 * holds it. This migration records who asked (`removal_requested_by`: the audit actor and
 * address), so the removal's `succeeded` audit row names them whichever workflow run finishes it.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_hosts', (t) => {
    /** Who requested the pending removal: `{actor: {type, userId?}, actorIp}`; null when none is pending. */
    t.jsonb('removal_requested_by').nullable();
  });
}

/**
 * Refuses while a removal is pending (`removal_requested_at` set on a host not removed): the
 * older code has no drain, so such a host would never be placed on again nor ever removed.
 * Cancel the removal (or let it finish) first. Tombstones (`removed_at` set) are the concern of
 * 20261121071500_agent_host_removed.
 */
export async function down(knex: Knex): Promise<void> {
  const pending: unknown = await knex('agent_hosts').whereNotNull('removal_requested_at').whereNull('removed_at').first(knex.raw('1 as present'));
  if (pending !== undefined) {
    throw new Error('Refusing to revert 20261125030000_agent_host_removal_request: agent_hosts holds hosts whose removal is pending (draining). Cancel those removals (POST /admin/agent/runner-hosts/<host>/cancel-removal) or let them finish first.');
  }
  await knex.schema.alterTable('agent_hosts', (t) => {
    t.dropColumn('removal_requested_by');
  });
}
