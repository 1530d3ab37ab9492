/**
 * Whether the member residency an inference grant is scoped to is still alive (a grant is renewed
 * only while it is): its attempt is `running` on that host, the host heartbeats within
 * `AGENT_HOST_STALE_SECONDS` and is not removed (a host whose removal is pending drains: its
 * running turns keep their grants and finish; docs/agent-hosts.md "Removal"), and (when a group is
 * named) the group's container is still the same generation. Used by the grant workflow's renewal
 * and by the host's grant route.
 */
import type { Db } from '../../lib/db';

export interface ResidencyInput {
  grantId: string;
  attemptId: string;
  hostId: string;
  groupId: string | null;
  generation: number | null;
}

/** Whether the member residency a grant is scoped to is still alive (one query). */
export async function residencyAlive(db: Db, input: Omit<ResidencyInput, 'grantId'>, staleSeconds: number): Promise<boolean> {
  const query = db('agent_attempts as a')
    .join('agent_hosts as h', 'h.host_id', 'a.host_id')
    .where({ 'a.attempt_id': input.attemptId, 'a.host_id': input.hostId, 'a.state': 'running' })
    .whereNull('h.removed_at')
    .where('h.last_heartbeat_at', '>', db.raw(`now() - make_interval(secs => ?)`, [staleSeconds]));
  if (input.groupId !== null && input.generation !== null) {
    query.join('agent_sandboxes as s', 's.host_id', 'a.host_id')
      .where({ 's.group_id': input.groupId, 's.generation': input.generation });
  }
  const row = await query.first<{ attempt_id: string } | undefined>('a.attempt_id');
  return row !== undefined;
}
