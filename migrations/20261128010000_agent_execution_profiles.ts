/**
 * Execution profiles (docs/execution-profiles.md): the profile of each job and of each sandbox
 * group (chosen when the job is created; a group takes its first chat's), why a queued turn waits
 * (`agent_turns.wait_reason`, shown to its owner), and each host's last runtime preflight
 * (`agent_hosts.preflight`, shown to operators). Jobs and groups from before get the safe profile
 * `untrusted-vm-v1`; a group whose existing container runs under another runtime is refused by the
 * host until an operator archives it (the restore recreates it under the right runtime).
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

const PROFILES = `('untrusted-vm-v1', 'trusted-v1')`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_jobs', (t) => {
    t.text('execution_profile').notNullable().defaultTo('untrusted-vm-v1');
  });
  await knex.schema.alterTable('agent_sandboxes', (t) => {
    t.text('execution_profile').notNullable().defaultTo('untrusted-vm-v1');
  });
  await knex.raw(`alter table agent_jobs add constraint agent_jobs_execution_profile_check check (execution_profile in ${PROFILES})`);
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_execution_profile_check check (execution_profile in ${PROFILES})`);
  await knex.schema.alterTable('agent_turns', (t) => {
    /** Why this queued turn is not running yet (admission's last answer); null once admitted or when nothing is known. */
    t.text('wait_reason').nullable();
  });
  await knex.schema.alterTable('agent_hosts', (t) => {
    /** The runner's last runtime preflight as it reported it (kernels, runtimes, backend); null before one. */
    t.jsonb('preflight').nullable();
  });
}

/** Refuses while any job runs `trusted-v1`: the older code would run it under its own single runtime silently. */
export async function down(knex: Knex): Promise<void> {
  const trusted: unknown = await knex('agent_jobs').where({ execution_profile: 'trusted-v1' }).first(knex.raw('1 as present'));
  if (trusted !== undefined) {
    throw new Error('Refusing to revert 20261128010000_agent_execution_profiles: jobs run the trusted-v1 profile. Delete them first.');
  }
  await knex.schema.alterTable('agent_hosts', (t) => t.dropColumn('preflight'));
  await knex.schema.alterTable('agent_turns', (t) => t.dropColumn('wait_reason'));
  await knex.schema.alterTable('agent_sandboxes', (t) => t.dropColumn('execution_profile'));
  await knex.schema.alterTable('agent_jobs', (t) => t.dropColumn('execution_profile'));
}
