/**
 * The limits an attempt runs under (host settings; docs/agent-admin.md "Host settings"):
 * admission reads the saved host settings once and records them here, so the workflow's timeouts,
 * the container a new sandbox gets and what the host's driver enforces all come from one record,
 * and a change of the settings never reaches a turn already admitted. Null for attempts admitted
 * before this migration (they ran under the environment's limits).
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_attempts', (t) => {
    /** `TurnLimits` (agent/settings/host-settings.ts) as JSON; null: the environment's limits. */
    t.jsonb('limits').nullable();
  });
}

/**
 * Refuses while a running attempt has recorded limits: the older code would give that turn its own
 * environment's limits halfway through. Once no such attempt runs, the column is only a record of
 * finished attempts (each change of the host settings is in the audit log) and is dropped.
 */
export async function down(knex: Knex): Promise<void> {
  const running: unknown = await knex('agent_attempts').where({ state: 'running' }).whereNotNull('limits').first(knex.raw('1 as present'));
  if (running !== undefined) {
    throw new Error('Refusing to revert 20261126030000_agent_attempt_limits: running attempts carry recorded limits. Let their turns finish (or cancel them) first.');
  }
  await knex.schema.alterTable('agent_attempts', (t) => {
    t.dropColumn('limits');
  });
}
