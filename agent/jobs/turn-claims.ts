/**
 * The shared claim queue (docs/agent-hosts.md "The claim queue"): a host with free slots admits
 * the oldest queued turns it may run, for every chat at once, instead of each chat's workflow
 * admitting only its own next turn. One transaction: the host row locked `FOR UPDATE` (which
 * serializes slot counting with every placement on this host), then up to <free slots> candidate
 * turns locked `FOR UPDATE SKIP LOCKED` (a turn another admission or cancel holds is left to it,
 * never waited for), each admitted by the same function the chat workflow's admission uses.
 */
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import { effectiveSlots, runningCounts, type SlotColumns } from '../hosts/placement';
import { PENDING_STATES } from '../sandboxes/sandbox-actions';
import { admitClaimed, type AdmissionLimits, type AdmittedTurn } from './turn-admission';
import { claimNextTurn } from './turn-transitions';

/** A turn a host's claim admitted, with what its chat workflow is woken by. */
export interface ClaimedTurn {
  jobId: string;
  ownerId: number;
  executionProfile: ExecutionProfile;
  admitted: AdmittedTurn;
}

interface Candidate { job_id: string; seq: number; owner_id: string; execution_profile: ExecutionProfile }

/** Sandbox group states that make a chat's turn wait (an operator action or a restore in progress). */
const BLOCKING_GROUP_STATES: string[] = [...PENDING_STATES, 'restoring'];

/**
 * Admits up to `hostId`'s free slots of the oldest claimable queued turns and answers them; the
 * caller wakes their chat workflows after the commit. Claimable: the chat's next turn (every
 * earlier turn terminal), not deleted, its sandbox group not busy with an operator action; a chat
 * retained on a host only on that host; a new chat, or one whose group is cold, on any host that
 * attests its profile. Nothing is claimed on a host that is offline or being removed.
 */
export async function claimQueuedTurns(db: Db, hostId: string, limits: AdmissionLimits): Promise<ClaimedTurn[]> {
  return db.transaction(async (trx) => {
    const host = await trx('agent_hosts').where({ host_id: hostId }).whereNull('removal_requested_at').whereNull('removed_at')
      .where('last_heartbeat_at', '>', trx.raw('now() - make_interval(secs => ?)', [limits.staleSeconds]))
      // SKIP LOCKED here too: while another claim or a chat's admission holds this host's row, this
      // claim gives up at once instead of holding a connection in the queue behind it (claims start
      // on every heartbeat and every finished turn; queued behind one slow holder they would take
      // the whole pool). The holder counts the slots; the next heartbeat or finished turn claims again.
      .forUpdate().skipLocked().first<(SlotColumns & { capabilities: unknown }) | undefined>('slots_saved', 'slots_total', 'capabilities');
    if (!host) return [];
    const free = effectiveSlots(host, limits.defaultSlots) - ((await runningCounts(trx, [hostId])).get(hostId) ?? 0);
    if (free <= 0) return [];
    const { rows } = await trx.raw<{ rows: Candidate[] }>(`
      select t.job_id, t.seq, j.owner_id, j.execution_profile
        from agent_turns t
        join agent_jobs j on j.job_id = t.job_id
        left join agent_sandboxes g on g.group_id = j.group_id
       where t.state = 'queued' and j.deleted_at is null
         and not exists (select 1 from agent_turns e where e.job_id = t.job_id and e.seq < t.seq and e.state in ('queued', 'running'))
         and (g.state is null or not (g.state = any(?::text[])))
         and (case when j.host_id is not null and coalesce(g.state, '') <> 'cold' then j.host_id = ?
                   else (select capabilities from agent_hosts where host_id = ?) @> jsonb_build_array(coalesce(g.execution_profile, j.execution_profile)) end)
       order by t.created_at, t.turn_id
       limit ?
       for update of t, j skip locked`, [[...BLOCKING_GROUP_STATES], hostId, hostId, free]);
    const claimed: ClaimedTurn[] = [];
    for (const row of rows) {
      // Rows already locked by this transaction: the claim re-checks them without waiting.
      const claim = await claimNextTurn(trx, { jobId: row.job_id, seq: row.seq });
      if (claim.kind !== 'claimable') continue;
      const admission = await admitClaimed(trx, claim, limits, { claimHostId: hostId });
      if (admission.kind === 'admitted') {
        claimed.push({ jobId: row.job_id, ownerId: Number(row.owner_id), executionProfile: row.execution_profile, admitted: admission });
      }
    }
    return claimed;
  });
}

export interface ClaimDeps {
  db: Db;
  /** Wakes a chat workflow (signal-with-start `wake`): `ChatDelivery.wake`. */
  wake: (job: { jobId: string; ownerId: number; executionProfile: ExecutionProfile }) => Promise<boolean>;
  log: Logger;
  /** The admission limits now (read at each claim: the host settings may change). */
  limits: () => AdmissionLimits;
}

/**
 * Claims for `hostId` and wakes the chat workflow of every turn claimed, so it dispatches the turn
 * at once. Best effort: a failed claim leaves the turns queued (the chat workflows' own admission
 * still runs them), and a chat that cannot be woken takes its turn at its next admission try or
 * from the reconciler.
 */
export async function claimAndWake(deps: ClaimDeps, hostId: string): Promise<number> {
  let claimed: ClaimedTurn[];
  try {
    claimed = await claimQueuedTurns(deps.db, hostId, deps.limits());
  } catch (err) {
    deps.log.warn({ event: 'agent_turn_claim_failed', host_id: hostId, err: (err as Error).message }, 'claiming queued turns failed; chats admit them themselves');
    return 0;
  }
  if (claimed.length === 0) return 0;
  deps.log.info({ event: 'agent_turns_claimed', host_id: hostId, turns: claimed.map((c) => c.admitted.turnId) }, 'host claimed queued turns');
  await Promise.all(claimed.map((c) => deps.wake({ jobId: c.jobId, ownerId: c.ownerId, executionProfile: c.executionProfile })));
  return claimed.length;
}
