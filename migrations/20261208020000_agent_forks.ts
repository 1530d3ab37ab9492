/**
 * Forks (docs/sandboxes.md "Forks"): a chat forked from another chat at one of its completed turns
 * (the anchor) records where it came from. The fork is a new member of the original's sandbox
 * group (its own row in `agent_sandbox_members`, its own UID), so no new table is needed.
 *
 * - `forked_from_job_id`, `fork_anchor_turn_id`, `fork_anchor_seq`: the original chat and its
 *   anchor turn; null for a chat that is no fork.
 * - `fork_historical`: the anchor was not the original's latest finished turn when the fork was
 *   made, so its native session must be cut back to the anchor: only hosts attesting
 *   `native-fork-at-anchor-v1` may run its first turn.
 * - `fork_prepared_at`: when the host's fork helper made the fork's own native session from the
 *   original's (on the fork's first admitted turn); null until then.
 */
import type { Knex } from 'knex';

const MIGRATION = '20261208020000_agent_forks';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_jobs', (t) => {
    t.text('forked_from_job_id').nullable().references('agent_jobs.job_id').onDelete('SET NULL');
    t.text('fork_anchor_turn_id').nullable().references('agent_turns.turn_id').onDelete('SET NULL');
    t.integer('fork_anchor_seq').nullable();
    t.boolean('fork_historical').notNullable().defaultTo(false);
    t.timestamp('fork_prepared_at', { useTz: true }).nullable();
  });
}

/**
 * Refuses while any chat is a fork: the older code would treat it as an ordinary chat of its own and
 * lose where it came from (and, before its first turn, the anchor its native session is cut at).
 */
export async function down(knex: Knex): Promise<void> {
  const fork: unknown = await knex('agent_jobs').whereNotNull('forked_from_job_id').first(knex.raw('1 as present'));
  if (fork !== undefined) {
    throw new Error(`Refusing to revert ${MIGRATION}: some chats are forks of other chats. Delete the forks first.`);
  }
  await knex.schema.alterTable('agent_jobs', (t) => {
    t.dropColumn('fork_prepared_at');
    t.dropColumn('fork_historical');
    t.dropColumn('fork_anchor_seq');
    t.dropColumn('fork_anchor_turn_id');
    t.dropColumn('forked_from_job_id');
  });
}
