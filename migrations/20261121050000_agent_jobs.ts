/**
 * The agent control plane's records (docs/agent-api.md, docs/agent-hosts.md): jobs (one chat each), their
 * strictly ordered turns, execution attempts (the fence for a host's writes), the normalized event
 * log, retained sandbox groups and their members, inference grants, and owners' global variables.
 * PostgreSQL is the source of truth; Temporal workflows drive the state machines over these rows.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

/** Dropped in this order on the way down (children first). */
export const TABLES = [
  'agent_owner_variables', 'agent_grants', 'agent_events', 'agent_attempts', 'agent_sandbox_members',
  'agent_turns', 'agent_sandboxes', 'agent_jobs',
] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_jobs', (t) => {
    t.text('job_id').primary();
    t.bigInteger('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('title').notNullable();
    /** `prompt` (first meaningful line), `owner` (given at creation) or `generated`. */
    t.text('title_source').notNullable().defaultTo('prompt');
    t.text('model').notNullable();
    t.text('repo').nullable();
    t.text('base_ref').nullable();
    t.text('base_sha').nullable();
    t.text('environment_id').nullable();
    /** The task's own environment overrides (names → values). */
    t.jsonb('env').notNullable().defaultTo('{}');
    /** Agent driver: `builtin` or `cli`. */
    t.text('driver').notNullable().defaultTo('builtin');
    /** Placement: the host that holds this chat's sandbox once its first turn is admitted. */
    t.text('host_id').nullable().references('agent_hosts.host_id').onDelete('RESTRICT');
    t.text('group_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deleted_at', { useTz: true }).nullable();
    t.index(['owner_id', 'created_at']);
    t.index(['host_id']);
  });
  await knex.raw(`alter table agent_jobs add constraint agent_jobs_driver_check check (driver in ('builtin', 'cli'))`);
  await knex.raw(`alter table agent_jobs add constraint agent_jobs_repo_less_check check (repo is not null or (base_ref is null and environment_id is null))`);

  await knex.schema.createTable('agent_turns', (t) => {
    t.text('turn_id').primary();
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('prompt').notNullable();
    t.text('state').notNullable().defaultTo('queued');
    t.text('result').nullable();
    t.text('error').nullable();
    /** The attempt currently (or last) executing this turn. */
    t.text('attempt_id').nullable();
    t.timestamp('cancel_requested_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true }).nullable();
    t.timestamp('finished_at', { useTz: true }).nullable();
    t.unique(['job_id', 'seq']);
  });
  await knex.raw(`alter table agent_turns add constraint agent_turns_state_check check (state in ('queued', 'running', 'completed', 'failed', 'cancelled'))`);
  await knex.raw(`create index agent_turns_active on agent_turns (job_id, seq) where state in ('queued', 'running')`);

  await knex.schema.createTable('agent_sandboxes', (t) => {
    t.text('group_id').primary();
    t.text('host_id').notNullable().references('agent_hosts.host_id').onDelete('RESTRICT');
    t.text('container_name').notNullable();
    t.text('container_id').nullable();
    /** Incarnation of the group's container; changes when it is recreated or restored. */
    t.integer('generation').notNullable().defaultTo(1);
    t.text('state').notNullable().defaultTo('starting');
    t.integer('fork_helper_version').notNullable().defaultTo(2);
    t.jsonb('resources').nullable();
    t.timestamp('last_activity_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['host_id', 'state']);
  });
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in ('starting', 'running', 'stopping', 'stopped', 'failed', 'cold', 'restoring'))`);

  await knex.schema.createTable('agent_sandbox_members', (t) => {
    t.text('job_id').primary().references('agent_jobs.job_id').onDelete('CASCADE');
    t.text('group_id').notNullable().references('agent_sandboxes.group_id').onDelete('CASCADE');
    /** Fixed UID of this member inside the group's container. */
    t.integer('uid').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['group_id', 'uid']);
  });

  await knex.schema.createTable('agent_attempts', (t) => {
    t.text('attempt_id').primary();
    t.text('turn_id').notNullable().references('agent_turns.turn_id').onDelete('CASCADE');
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.text('host_id').notNullable().references('agent_hosts.host_id').onDelete('RESTRICT');
    /** `running` holds one of the host's slots; every other state is terminal. */
    t.text('state').notNullable().defaultTo('running');
    t.integer('generation').nullable();
    t.text('error').nullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true }).nullable();
    t.index(['turn_id']);
  });
  await knex.raw(`alter table agent_attempts add constraint agent_attempts_state_check check (state in ('running', 'completed', 'failed', 'cancelled', 'abandoned'))`);
  await knex.raw(`create index agent_attempts_running on agent_attempts (host_id) where state = 'running'`);
  await knex.raw(`create unique index agent_attempts_one_running_per_turn on agent_attempts (turn_id) where state = 'running'`);

  await knex.schema.createTable('agent_events', (t) => {
    t.bigIncrements('event_id').primary();
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.integer('turn_seq').notNullable();
    t.text('attempt_id').nullable();
    /** Order within the attempt (or within the turn for control-plane events). */
    t.integer('seq').notNullable();
    t.text('event_type').notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.boolean('is_error').notNullable().defaultTo(false);
    /** Makes a retried write of the same event a no-op. */
    t.text('dedupe_key').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['job_id', 'event_id']);
  });

  await knex.schema.createTable('agent_grants', (t) => {
    t.text('grant_id').primary();
    t.text('token_hash').notNullable().unique();
    t.text('token_prefix').notNullable();
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('model').notNullable();
    /** `turn` (renewed while its residency heartbeats) or `prompt_rewrite` (120 s, never renewed). */
    t.text('kind').notNullable();
    t.text('job_id').nullable();
    t.text('attempt_id').nullable();
    t.text('group_id').nullable();
    t.integer('generation').nullable();
    t.text('host_id').nullable();
    t.text('operation_id').nullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['updated_at']);
  });
  await knex.raw(`alter table agent_grants add constraint agent_grants_kind_check check (kind in ('turn', 'prompt_rewrite'))`);

  await knex.schema.createTable('agent_owner_variables', (t) => {
    t.bigInteger('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['user_id', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, '20261121050000_agent_jobs', TABLES);
}
