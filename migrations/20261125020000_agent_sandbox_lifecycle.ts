/**
 * Sandbox group lifecycle (docs/sandboxes.md "Lifecycle"): the states an operator's
 * actions move a group through (`stop_pending`, `deleting`, `deleted`, and `dead` as observed),
 * the action in progress, the previous state it returns to when it cannot finish, hiding from
 * the default inventory (reversible), and when native resume was lost (after a confirmed removal).
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

const OLD_STATES = `'starting', 'running', 'stopping', 'stopped', 'failed', 'cold', 'restoring'`;
const NEW_STATES = `${OLD_STATES}, 'dead', 'stop_pending', 'deleting', 'deleted'`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_sandboxes', (t) => {
    /** The operator action in progress (`stop`, `delete`, `force_delete`); null when none. */
    t.text('pending_action').nullable();
    /** The state the group returns to when the action in progress cannot finish. */
    t.text('pending_from_state').nullable();
    /** Hidden from the default inventory since; null when shown. */
    t.timestamp('hidden_at', { useTz: true }).nullable();
    /** Why it is hidden: `host_stale` or `stopped`. */
    t.text('hidden_reason').nullable();
    /** Native resume of the members is impossible since (set only after the host confirmed the removal). */
    t.timestamp('native_resume_lost_at', { useTz: true }).nullable();
  });
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_state_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in (${NEW_STATES}))`);
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_pending_action_check check (pending_action in ('stop', 'delete', 'force_delete'))`);
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_hidden_reason_check check (hidden_reason in ('host_stale', 'stopped'))`);
}

export async function down(knex: Knex): Promise<void> {
  const held: unknown = await knex('agent_sandboxes')
    .whereIn('state', ['dead', 'stop_pending', 'deleting', 'deleted'])
    .orWhereNotNull('pending_action').orWhereNotNull('hidden_at').orWhereNotNull('native_resume_lost_at')
    .first(knex.raw('1 as present'));
  if (held !== undefined) {
    throw new Error('Refusing to revert 20261125020000_agent_sandbox_lifecycle: agent_sandboxes holds lifecycle states or hidden groups that would be lost. Finish or undo those actions first.');
  }
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_hidden_reason_check');
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_pending_action_check');
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_state_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in (${OLD_STATES}))`);
  await knex.schema.alterTable('agent_sandboxes', (t) => {
    t.dropColumns('pending_action', 'pending_from_state', 'hidden_at', 'hidden_reason', 'native_resume_lost_at');
  });
}
