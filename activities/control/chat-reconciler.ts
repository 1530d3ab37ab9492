/**
 * Delivers turns that PostgreSQL holds but no chat workflow is working on: a turn accepted while
 * Temporal was unreachable, or a chat whose idle workflow ended just as a turn arrived. Runs in the
 * control worker every `intervalMs`; waking a chat that is already working is harmless (the
 * workflow re-reads PostgreSQL and finds nothing new).
 */
import type { ExecutionProfile } from '../../lib/execution-profiles';
import type { Db } from '../../lib/db';
import type { Logger } from '../../lib/logger';
import type { ChatDelivery } from '../../agent/jobs/chat-delivery';

export interface ReconcilerDeps {
  db: Db;
  delivery: ChatDelivery;
  log: Logger;
  /** Only turns queued at least this long are considered stuck. */
  minQueuedSeconds: number;
}

/**
 * Wakes every chat with a queued turn older than the threshold and no running turn, or with a turn a
 * host's claim admitted longer ago than the threshold that no workflow has taken; returns how many.
 */
export async function reconcileQueuedTurns(deps: ReconcilerDeps): Promise<number> {
  const rows = await deps.db('agent_turns as t')
    .join('agent_jobs as j', 'j.job_id', 't.job_id')
    .where('t.state', 'queued')
    .whereNull('j.deleted_at')
    .where('t.created_at', '<', deps.db.raw(`now() - make_interval(secs => ?)`, [deps.minQueuedSeconds]))
    .whereNotExists((q) => q.select(deps.db.raw('1')).from('agent_turns as r').whereRaw('r.job_id = t.job_id').where('r.state', 'running'))
    // A turn a host's claim admitted that no chat workflow has taken yet (its wake was lost).
    .orWhere((q) => q.where('t.state', 'running').whereNull('j.deleted_at')
      .whereExists((a) => a.select(deps.db.raw('1')).from('agent_attempts as a').whereRaw('a.attempt_id = t.attempt_id')
        .where('a.state', 'running').whereNotNull('a.admission').whereNull('a.dispatched_run')
        .where('a.started_at', '<', deps.db.raw(`now() - make_interval(secs => ?)`, [deps.minQueuedSeconds]))))
    .distinct<Array<{ job_id: string; owner_id: string; execution_profile: ExecutionProfile; claimed: boolean }>>(
      't.job_id', 'j.owner_id', 'j.execution_profile', deps.db.raw(`t.state = 'running' as claimed`))
    .limit(500);
  let woken = 0;
  for (const row of rows) {
    // A claimed turn nobody took: its chat must ask again now. A queued turn: the chat only rechecks,
    // and an admission already waiting for a slot keeps waiting (the claim queue starts it).
    const why = row.claimed ? {} : { recheck: true };
    if (await deps.delivery.wake({ jobId: row.job_id, ownerId: Number(row.owner_id), executionProfile: row.execution_profile }, why)) woken += 1;
  }
  if (rows.length > 0) deps.log.info({ event: 'agent_chats_reconciled', found: rows.length, woken }, 'woke chats with queued turns');
  return woken;
}
