/**
 * Drops the sandbox group states `stopping` and `failed` from `agent_sandboxes.state`: no code
 * ever wrote them (docs/sandboxes.md "States"). A stop in progress is `stop_pending` (with
 * `pending_action = stop`); a container that cannot be created or started, or a restore that
 * fails, fails the turn and leaves the group where the next turn retries from (`starting`, or
 * `cold` again), so a group never ends in a state of its own for a failure.
 */
import type { Knex } from 'knex';

/** Adds no table. */
export const TABLES = [] as const;

const KEPT = `'starting', 'running', 'stopped', 'cold', 'restoring', 'dead', 'stop_pending', 'deleting', 'deleted', 'archiving'`;
const DROPPED = ['stopping', 'failed'] as const;

async function setStates(knex: Knex, states: string): Promise<void> {
  await knex.raw('alter table agent_sandboxes drop constraint agent_sandboxes_state_check');
  await knex.raw(`alter table agent_sandboxes add constraint agent_sandboxes_state_check check (state in (${states}))`);
}

export async function up(knex: Knex): Promise<void> {
  const used = await knex('agent_sandboxes').whereIn('state', DROPPED).groupBy('state')
    .select<Array<{ state: string; count: string }>>('state', knex.raw('count(*) as count'));
  if (used.length > 0) {
    throw new Error(`Refusing to apply 20261208050000_agent_sandbox_states_unused: ${used.map((r) => `${r.count} group(s) ${r.state}`).join(', ')}. `
      + 'No version of the control plane writes these states; move those groups to stopped (or delete them) first.');
  }
  await setStates(knex, KEPT);
}

/** Allows the two states again (nothing is lost: no row can hold them). */
export async function down(knex: Knex): Promise<void> {
  await setStates(knex, `${KEPT}, ${DROPPED.map((s) => `'${s}'`).join(', ')}`);
}
