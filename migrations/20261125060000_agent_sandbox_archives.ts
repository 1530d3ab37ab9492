/**
 * Sandbox archives (archive to object store and delete, cold and restoring; docs/sandboxes.md
 * "Archives"): the `archiving` state while an archive is prepared, the `archive_delete` action, and
 * the receipts of verified archives. A receipt is written only after the object store verified the
 * object's length and SHA-256; a cold group restores from its newest receipt.
 */
import type { Knex } from 'knex';

export const TABLES = ['agent_sandbox_archives'] as const;

const OLD_STATES = `'starting', 'running', 'stopping', 'stopped', 'failed', 'cold', 'restoring', 'dead', 'stop_pending', 'deleting', 'deleted'`;
const NEW_STATES = `${OLD_STATES}, 'archiving'`;
const OLD_ACTIONS = `'stop', 'delete', 'force_delete'`;
const NEW_ACTIONS = `${OLD_ACTIONS}, 'archive_delete'`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_sandbox_archives', (t) => {
    t.text('group_id').notNullable().references('group_id').inTable('agent_sandboxes').onDelete('CASCADE');
    /** The generation whose container was archived. */
    t.integer('generation').notNullable();
    t.text('object_key').notNullable().unique();
    t.bigInteger('bytes').notNullable();
    t.text('sha256').notNullable();
    /** How the store verified it: `stored-checksum` or `read`. */
    t.text('verified_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['group_id', 'generation']);
  });
  await knex.raw(`alter table agent_sandbox_archives add constraint agent_sandbox_archives_sha256_check check (sha256 ~ '^[0-9a-f]{64}$')`);
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_state_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in (${NEW_STATES}))`);
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_pending_action_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_pending_action_check check (pending_action in (${NEW_ACTIONS}))`);
}

/**
 * Refuses while anything depends on the archives this revert drops: a `cold` or `restoring` group
 * (its workspace exists only as an archive, found and verified through its receipt), an
 * `archiving` one (an archive under way), or any receipt.
 */
async function refuseArchivedData(knex: Knex): Promise<void> {
  const states = await knex('agent_sandboxes').whereIn('state', ['archiving', 'cold', 'restoring']).orWhere('pending_action', 'archive_delete')
    .groupBy('state').select<Array<{ state: string; count: string }>>('state', knex.raw('count(*) as count'));
  const receipts = await knex('agent_sandbox_archives').count<Array<{ count: string }>>({ count: '*' });
  const held = states.map((r) => `${r.count} group(s) ${r.state}`);
  const receiptCount = Number(receipts[0]?.count ?? 0);
  if (receiptCount > 0) held.push(`${receiptCount} archive receipt(s) in agent_sandbox_archives`);
  if (held.length === 0) return;
  throw new Error(
    `Refusing to revert 20261125060000_agent_sandbox_archives: ${held.join(', ')}; their workspaces exist only as archives whose receipts this revert would drop. `
    + 'Let archiving groups finish, restore (a new turn) or delete the cold and restoring groups, and delete the receipts first.',
  );
}

export async function down(knex: Knex): Promise<void> {
  await refuseArchivedData(knex);
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_pending_action_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_pending_action_check check (pending_action in (${OLD_ACTIONS}))`);
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_state_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in (${OLD_STATES}))`);
  await knex.schema.dropTable('agent_sandbox_archives');
}
