/**
 * The control plane's state as counted for metrics (docs/metrics.md): turns by state, sandbox
 * groups by state, each enrolled host's slots (capacity as admission sees it, and the running
 * attempts holding them) and the jobs waiting with a queued turn. Four small aggregate queries,
 * run by the API's periodic refresh, never per scrape.
 */
import type { Db } from '../../lib/db';
import { effectiveSlots } from '../hosts/placement';
import { INVENTORY_STATES } from '../sandboxes/sandbox-inventory';

/** Every turn state (the `agent_turns_state_check` constraint): each is reported, 0 included. */
export const TURN_STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
/** Every sandbox group state (the `agent_sandboxes_state_check` constraint). */
export const SANDBOX_STATES = INVENTORY_STATES;

export interface HostSlots {
  hostId: string;
  /** The slots admission uses (agent/hosts/placement.ts `effectiveSlots`). */
  capacity: number;
  /** Running attempts on the host, one slot each. */
  used: number;
}

export interface ControlPlaneSnapshot {
  turnsByState: Map<string, number>;
  sandboxesByState: Map<string, number>;
  hosts: HostSlots[];
  /** Jobs with at least one queued turn. */
  jobsQueued: number;
}

interface HostRow {
  host_id: string;
  slots_saved: number | null;
  slots_total: number | null;
  used: string | number;
}

async function countsBy(db: Db, table: string, known: readonly string[]): Promise<Map<string, number>> {
  const rows = await db(table).select('state').count<Array<{ state: string; count: string | number }>>('* as count').groupBy('state');
  const counts = new Map<string, number>(known.map((state) => [state, 0]));
  for (const row of rows) counts.set(row.state, Number(row.count));
  return counts;
}

/** Reads the snapshot (throws when PostgreSQL does not answer: the caller keeps its last one). */
export async function readControlPlaneSnapshot(db: Db, defaultSlots: number): Promise<ControlPlaneSnapshot> {
  const [turnsByState, sandboxesByState, hostRows, queued] = await Promise.all([
    countsBy(db, 'agent_turns', TURN_STATES),
    countsBy(db, 'agent_sandboxes', SANDBOX_STATES),
    db.raw<{ rows: HostRow[] }>(`select h.host_id, h.slots_saved, h.slots_total,
      (select count(*) from agent_attempts a where a.host_id = h.host_id and a.state = 'running') as used
      from agent_hosts h order by h.host_id`),
    db('agent_turns').where('state', 'queued').countDistinct<Array<{ count: string | number }>>('job_id as count'),
  ]);
  return {
    turnsByState,
    sandboxesByState,
    hosts: hostRows.rows.map((row) => ({ hostId: row.host_id, capacity: effectiveSlots(row, defaultSlots), used: Number(row.used) })),
    jobsQueued: Number(queued[0]?.count ?? 0),
  };
}
