/**
 * The publisher (issue 34; docs/publisher.md): each turn of a chat with a repository leaves one
 * row, the diff its host captured (uploaded over the host API, fenced to the attempt then leased
 * to that host), and what publishing it as a commit on `agent/<job id>` and a draft pull request did.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

const MIGRATION = '20261128063000_agent_turn_patches';
export const TABLES = ['agent_turn_patches'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_turn_patches', (t) => {
    /** One row per turn: a second upload for the turn changes nothing. */
    t.text('turn_id').primary().references('agent_turns.turn_id').onDelete('CASCADE');
    t.text('attempt_id').notNullable().references('agent_attempts.attempt_id').onDelete('CASCADE');
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.integer('turn_seq').notNullable();
    /** `captured` (patch and trees; an empty patch when nothing changed) | `too_large` (bytes only) | `failed` (capture_error). */
    t.text('capture_state').notNullable();
    /** The workspace as a git tree at the turn's start and end (hex object ids). */
    t.text('start_tree').nullable();
    t.text('end_tree').nullable();
    /** Bytes of the patch (also when too large to keep). */
    t.bigInteger('bytes').nullable();
    /** `git diff --binary <start_tree> <end_tree>`; null unless captured. */
    t.binary('patch').nullable();
    t.text('capture_error').nullable();
    /** `none` (nothing to publish) | `pending` | `published` | `failed` (publish_error says why, for the owner). */
    t.text('publish_state').notNullable();
    t.text('publish_error').nullable();
    t.text('branch').nullable();
    t.text('commit_sha').nullable();
    t.integer('pr_number').nullable();
    t.text('pr_url').nullable();
    t.boolean('pr_draft').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('published_at', { useTz: true }).nullable();
    t.index(['job_id', 'turn_seq']);
  });
  await knex.raw(`alter table agent_turn_patches add constraint agent_turn_patches_capture_state_check check (capture_state in ('captured', 'too_large', 'failed'))`);
  await knex.raw(`alter table agent_turn_patches add constraint agent_turn_patches_publish_state_check check (publish_state in ('none', 'pending', 'published', 'failed'))`);
  await knex.raw(`create index agent_turn_patches_pending on agent_turn_patches (created_at) where publish_state = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
