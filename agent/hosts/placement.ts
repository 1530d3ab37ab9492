/**
 * Host placement and slot admission (slots 2 to 128 per host; docs/agent-hosts.md "Slots"): which
 * enrolled host may run a turn now. A retained chat runs only on its own host; a new chat goes to
 * the online host with the most free slots. Admission is decided inside the caller's transaction
 * with the candidate host rows locked `FOR UPDATE` (in host id order), so concurrent placements on
 * one host serialize and the count of `running` attempts they read already includes every attempt
 * admitted before them. The caller inserts its `running` attempt in the same transaction before
 * committing. Needs READ COMMITTED (PostgreSQL's default): each statement sees rows committed
 * before it.
 */
import { HOST_ATTESTATIONS, type ExecutionProfile } from '../../lib/execution-profiles';
import type { Knex } from 'knex';

/** The slot columns of an `agent_hosts` row. */
export interface SlotColumns {
  slots_saved: number | null;
  slots_total: number | null;
}

/**
 * The slots admission uses: the lower of the operator's saved number and the heartbeat-reported
 * `slots_total` (saved null → the reported number; nothing reported yet → 0, not admitting).
 * `_defaultSlots` (`AGENT_HOST_SLOTS`) is what a runner reports when nothing is saved; it never
 * raises admission above what the runner itself reported.
 */
export function effectiveSlots(row: SlotColumns, _defaultSlots: number): number {
  if (row.slots_total === null) return 0;
  return row.slots_saved === null ? row.slots_total : Math.min(row.slots_saved, row.slots_total);
}

export interface PlaceTurnInput {
  /** The chat's host once it holds a retained sandbox there; null for a chat not yet placed. */
  jobHostId: string | null;
  /** A host whose last heartbeat is older than this is offline (`AGENT_HOST_STALE_SECONDS`). */
  staleSeconds: number;
  /** `AGENT_HOST_SLOTS`, passed to `effectiveSlots`. */
  defaultSlots: number;
  /** The chat's execution profile: only a host that attests it (in its heartbeat's capabilities) may run the turn. */
  profile: ExecutionProfile;
  /** Only this host (a host claiming work for itself, docs/agent-hosts.md "The claim queue"): no other host row is locked. */
  onlyHostId?: string;
  /** The turn is a historical fork's first: only a host attesting `native-fork-at-anchor-v1` may run it. */
  needsForkAtAnchor?: boolean;
}

/** Why a turn cannot be admitted now (it waits and is placed again later). */
export type PlacementWait = 'no_host' | 'host_full' | 'host_offline' | 'no_attested_host' | 'host_not_attested' | 'fork_at_anchor_not_attested';

export type Placement = { hostId: string } | { wait: PlacementWait };

interface LockedHost extends SlotColumns {
  host_id: string;
  online: boolean;
  attests: boolean;
  forks_at_anchor: boolean;
}

/** Locks the candidate host rows in host id order; `online` is judged by the database clock. */
async function lockHosts(trx: Knex.Transaction, input: PlaceTurnInput): Promise<LockedHost[]> {
  const query = trx('agent_hosts')
    .select<LockedHost[]>('host_id', 'slots_saved', 'slots_total')
    .select(trx.raw(
      `(removal_requested_at is null and last_heartbeat_at is not null
        and last_heartbeat_at > now() - make_interval(secs => ?)) as online`,
      [input.staleSeconds],
    ))
    .select(trx.raw('capabilities @> ?::jsonb as attests', [JSON.stringify([input.profile])]))
    .select(trx.raw('capabilities @> ?::jsonb as forks_at_anchor', [JSON.stringify([HOST_ATTESTATIONS.nativeForkAtAnchor])]))
    .orderBy('host_id')
    .forUpdate();
  if (input.onlyHostId !== undefined) query.where('host_id', input.onlyHostId);
  if (input.jobHostId !== null) {
    query.where('host_id', input.jobHostId);
  } else {
    query.whereNull('removal_requested_at')
      .whereNotNull('last_heartbeat_at')
      .where('last_heartbeat_at', '>', trx.raw('now() - make_interval(secs => ?)', [input.staleSeconds]));
  }
  return query;
}

/** Running attempts per host (each holds one slot); placement reads them after locking the host rows. */
export async function runningCounts(trx: Knex | Knex.Transaction, hostIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await trx('agent_attempts')
    .select('host_id')
    .count<Array<{ host_id: string; count: string }>>({ count: '*' })
    .where('state', 'running')
    .whereIn('host_id', hostIds)
    .groupBy('host_id');
  return new Map(rows.map((r) => [r.host_id, Number(r.count)]));
}

/**
 * Chooses the host for a turn inside `trx`, or says why it must wait: a retained chat only on its
 * own host (`host_offline` when that host is stale or being removed, `host_not_attested` when it
 * no longer attests the chat's execution profile, `host_full` when its running attempts reach its
 * effective slots); a new chat on the online host attesting the profile with the most free slots,
 * ties by host id (`no_host` when no host is online, `no_attested_host` when none online attests
 * the profile, `host_full` when every such host is full). A historical fork's first turn also
 * needs `native-fork-at-anchor-v1` (`fork_at_anchor_not_attested` while no candidate attests it).
 */
export async function placeTurn(trx: Knex.Transaction, input: PlaceTurnInput): Promise<Placement> {
  const hosts = await lockHosts(trx, input);
  const reachable = hosts.filter((h) => h.online);
  if (reachable.length === 0) return { wait: input.jobHostId !== null ? 'host_offline' : 'no_host' };
  const attested = reachable.filter((h) => h.attests);
  if (attested.length === 0) return { wait: input.jobHostId !== null ? 'host_not_attested' : 'no_attested_host' };
  const online = input.needsForkAtAnchor ? attested.filter((h) => h.forks_at_anchor) : attested;
  if (online.length === 0) return { wait: 'fork_at_anchor_not_attested' };
  const running = await runningCounts(trx, online.map((h) => h.host_id));
  let best: { hostId: string; free: number } | undefined;
  for (const host of online) {
    const free = effectiveSlots(host, input.defaultSlots) - (running.get(host.host_id) ?? 0);
    if (free > 0 && (!best || free > best.free)) best = { hostId: host.host_id, free };
  }
  return best ? { hostId: best.hostId } : { wait: 'host_full' };
}
