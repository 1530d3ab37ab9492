/**
 * Chat-title grants (docs/agent-api.md "Titles"): widens `agent_grants.kind` to `title` (one short-lived,
 * never-renewed grant per chat, operation `title-<job_id>`, used to generate the chat's title).
 * `down` refuses while title grants exist: narrowing the check would fail on them anyway, and
 * deleting them would let a chat generate its title a second time.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table agent_grants drop constraint agent_grants_kind_check');
  await knex.raw(`alter table agent_grants add constraint agent_grants_kind_check check (kind in ('turn', 'prompt_rewrite', 'title'))`);
}

export async function down(knex: Knex): Promise<void> {
  const titles: unknown = await knex('agent_grants').where({ kind: 'title' }).first(knex.raw('1 as present'));
  if (titles !== undefined) {
    throw new Error("Refusing to revert 20261121080000_agent_title_grants: agent_grants holds grants of kind 'title'. Delete them first.");
  }
  await knex.raw('alter table agent_grants drop constraint agent_grants_kind_check');
  await knex.raw(`alter table agent_grants add constraint agent_grants_kind_check check (kind in ('turn', 'prompt_rewrite'))`);
}
