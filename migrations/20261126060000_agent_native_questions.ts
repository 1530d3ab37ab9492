/**
 * Native questions (issue 26; docs/agent-drivers.md "Native questions"): a question a native CLI
 * asks its user during an attempt, shown to the chat's owner as a `question` event and answered
 * through the owner's answer route. One row per (attempt, the CLI's request id); the answer is
 * taken once, and only while the attempt is the turn's running one.
 */
import type { Knex } from 'knex';
import { dropTablesRefusingRows } from './support';

const MIGRATION = '20261126060000_agent_native_questions';
export const TABLES = ['agent_native_questions'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_native_questions', (t) => {
    t.text('attempt_id').notNullable().references('agent_attempts.attempt_id').onDelete('CASCADE');
    /** The CLI's own id of the request (Claude Code's control request id, Codex's JSON-RPC id). */
    t.text('request_id').notNullable();
    t.text('job_id').notNullable().references('agent_jobs.job_id').onDelete('CASCADE');
    t.integer('turn_seq').notNullable();
    t.text('cli').notNullable();
    /** The normalized questions (`[{id, header, question, multi_select, options}]`). */
    t.jsonb('questions').notNullable();
    /** `pending` → `answered` | `declined` (by the owner) | `expired` (the wait ended first). */
    t.text('state').notNullable().defaultTo('pending');
    /** The owner's answers by question id (`answered`), or null. */
    t.jsonb('answers').nullable();
    /** The owner's decline message (`declined`), or null. */
    t.text('message').nullable();
    t.bigInteger('answered_by').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('answered_at', { useTz: true }).nullable();
    t.primary(['attempt_id', 'request_id']);
    t.index(['job_id']);
  });
  await knex.raw(`alter table agent_native_questions add constraint agent_native_questions_state_check check (state in ('pending', 'answered', 'declined', 'expired'))`);
}

export async function down(knex: Knex): Promise<void> {
  await dropTablesRefusingRows(knex, MIGRATION, TABLES);
}
