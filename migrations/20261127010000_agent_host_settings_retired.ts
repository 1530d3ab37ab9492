/**
 * Retires three host settings that limited features this project does not have (forks and
 * terminals): `sessions_per_sandbox`, `terminals_per_sandbox`, `terminal_idle_timeout_seconds`
 * (docs/agent-admin.md "Host settings"). Their saved values did nothing, so they are deleted rather
 * than kept as rows every process would log as "not applied". When a row went, the settings'
 * change marker moves, so running processes read the settings again within 5 s.
 *
 * The list is written out here (not imported from agent/settings/host-settings.ts): a migration
 * must keep doing what it did when it was written.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export const RETIRED_KEYS = ['sessions_per_sandbox', 'terminals_per_sandbox', 'terminal_idle_timeout_seconds'] as const;

export async function up(knex: Knex): Promise<void> {
  const deleted = await knex('agent_settings').whereIn('key', RETIRED_KEYS).delete();
  if (deleted > 0) await knex('agent_settings_state').update({ revision: knex.raw('revision + 1'), updated_at: knex.fn.now() });
}

/**
 * Nothing to undo: the deleted values never applied, and the older code reads a key without a row
 * as its default, which is what it did with any of these values in effect.
 */
export function down(): Promise<void> {
  return Promise.resolve();
}
