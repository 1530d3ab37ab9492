/**
 * Native coding-agent drivers (issue 26; docs/agent-drivers.md): a chat's `driver` may also be
 * `codex` (Codex CLI) or `claude-code` (Claude Code), both run inside the sandbox.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table agent_jobs drop constraint agent_jobs_driver_check');
  await knex.raw(`alter table agent_jobs add constraint agent_jobs_driver_check check (driver in ('builtin', 'cli', 'codex', 'claude-code'))`);
}

/** Refuses while a chat uses a native driver: the older code could not run its next turn. */
export async function down(knex: Knex): Promise<void> {
  const native: unknown = await knex('agent_jobs').whereIn('driver', ['codex', 'claude-code']).first(knex.raw('1 as present'));
  if (native !== undefined) {
    throw new Error('Refusing to revert 20261126050000_agent_native_drivers: chats use the codex or claude-code driver. Delete them (or change their driver) first.');
  }
  await knex.raw('alter table agent_jobs drop constraint agent_jobs_driver_check');
  await knex.raw(`alter table agent_jobs add constraint agent_jobs_driver_check check (driver in ('builtin', 'cli'))`);
}
