/**
 * Removed execution hosts (guarded removal, docs/agent-hosts.md "Removal"): a removed host whose id
 * is still named by history (finished attempts, cold sandboxes, deleted chats: foreign keys that
 * RESTRICT) stays as a tombstone with `removed_at` set and an unusable credential; hosts nobody
 * names are deleted.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_hosts', (t) => {
    t.timestamp('removed_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  const removed: unknown = await knex('agent_hosts').whereNotNull('removed_at').first(knex.raw('1 as present'));
  if (removed !== undefined) {
    throw new Error('Refusing to revert 20261121071500_agent_host_removed: agent_hosts holds removed hosts that would come back. Delete them first.');
  }
  await knex.schema.alterTable('agent_hosts', (t) => {
    t.dropColumn('removed_at');
  });
}
