/**
 * The shared claim queue (docs/agent-hosts.md "The claim queue"): a host with free slots admits
 * queued turns itself, and the chat workflow dispatches them. `agent_attempts.admission` is what
 * admission decided (host, sandbox group, generation, limits: the workflow's `AdmittedTurn`);
 * `dispatched_run` is the chat workflow run that took it (null: admitted by a host's claim, not
 * yet taken). Attempts from before have neither: they are never taken again.
 */
import type { Knex } from 'knex';

export const TABLES = [] as const;

const MIGRATION = '20261208040000_agent_attempt_claims';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_attempts', (t) => {
    t.jsonb('admission').nullable();
    t.text('dispatched_run').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  const waiting: unknown = await knex('agent_attempts').where({ state: 'running' }).whereNotNull('admission').whereNull('dispatched_run')
    .first(knex.raw('1 as present'));
  if (waiting !== undefined) {
    throw new Error(`Refusing to revert ${MIGRATION}: running attempts admitted by a host's claim have not been taken by their chat workflow yet; `
      + 'reverting would lose what they were admitted with. Wait until no running attempt has admission set and dispatched_run null.');
  }
  await knex.schema.alterTable('agent_attempts', (t) => {
    t.dropColumn('admission');
    t.dropColumn('dispatched_run');
  });
}
