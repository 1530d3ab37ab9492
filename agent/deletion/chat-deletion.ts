/**
 * Owners' deletion of a chat (docs/chat-deletion.md): soft first, then
 * permanent.
 *
 * - **Soft delete** sets `agent_jobs.deleted_at`: the chat disappears from every owner list and
 *   view (they all read `deleted_at is null`), new turns are refused (404, like any chat the owner
 *   cannot see), its queued turns are cancelled and a running turn is asked to stop, all under the
 *   job's row lock (the lock order of admission, agent/jobs/turn-transitions.ts), so no turn of a
 *   deleted chat starts afterwards. Repeating it changes nothing.
 * - **Restore** clears `deleted_at` while permanent deletion has not been requested. Cancelled
 *   turns stay cancelled.
 * - **Permanent deletion** of a soft-deleted chat records one request in `agent_deletion_requests`
 *   (idempotent: asking again answers the same request); the deletion sweep carries it out. It
 *   cannot be undone.
 *
 * Another owner's chat and an unknown chat are 404, exactly alike.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { JOB_ID, newId } from '../jobs/job-store';
import { cancelTurn } from '../jobs/turn-transitions';

interface LockedJob {
  job_id: string;
  group_id: string | null;
  deleted_at: Date | null;
}

/** The owner's job row locked `FOR UPDATE`, soft-deleted or not; 404 for anything else. */
async function lockOwnedJob(trx: Knex.Transaction, jobId: string, ownerId: number): Promise<LockedJob> {
  const row = JOB_ID.test(jobId)
    ? await trx('agent_jobs').where({ job_id: jobId, owner_id: ownerId }).forUpdate().first<LockedJob | undefined>('job_id', 'group_id', 'deleted_at')
    : undefined;
  if (!row) throw new AppError('not_found', 'Job not found');
  return row;
}

/** A permanent deletion request as owners see it. */
export interface DeletionRequestView {
  request_id: string;
  /** `pending`, `running`, `failed` (retried a minute later) or `done`. */
  state: string;
  created_at: string;
}

async function requestOf(db: Db | Knex.Transaction, jobId: string): Promise<DeletionRequestView | undefined> {
  const row = await db('agent_deletion_requests').where({ job_id: jobId })
    .first<{ id: string; state: string; created_at: Date } | undefined>('id', 'state', 'created_at');
  return row ? { request_id: row.id, state: row.state, created_at: row.created_at.toISOString() } : undefined;
}

export interface SoftDeleted {
  job_id: string;
  deleted_at: string;
  /** Queued turns cancelled by this deletion. */
  cancelled_turns: number[];
  /** The running turn asked to stop (the caller signals its workflow), or null. */
  stopping_turn: number | null;
}

/** Soft-deletes the owner's chat (see the header); the caller signals a running turn to stop. */
export async function softDeleteChat(db: Db, input: { jobId: string; ownerId: number }): Promise<SoftDeleted> {
  return db.transaction(async (trx) => {
    const job = await lockOwnedJob(trx, input.jobId, input.ownerId);
    const cancelled: number[] = [];
    let stopping: number | null = null;
    let deletedAt = job.deleted_at;
    if (deletedAt === null) {
      const [row] = await trx('agent_jobs').where({ job_id: job.job_id })
        .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() }).returning<Array<{ deleted_at: Date }>>('deleted_at');
      deletedAt = row!.deleted_at;
    }
    // Also on a repeat: a turn still running then is asked again (the signal may have been lost).
    const active = await trx('agent_turns').where({ job_id: job.job_id }).whereIn('state', ['queued', 'running']).orderBy('seq')
      .select<Array<{ seq: number }>>('seq');
    for (const { seq } of active) {
      const result = await cancelTurn(trx, { jobId: job.job_id, seq });
      if (result.kind === 'cancelled') cancelled.push(seq);
      if (result.kind === 'cancel_requested') stopping = seq;
    }
    return { job_id: job.job_id, deleted_at: deletedAt.toISOString(), cancelled_turns: cancelled, stopping_turn: stopping };
  });
}

/** Undoes a soft delete: 409 when the chat is not deleted or permanent deletion was requested. */
export async function restoreChat(db: Db, input: { jobId: string; ownerId: number }): Promise<void> {
  await db.transaction(async (trx) => {
    const job = await lockOwnedJob(trx, input.jobId, input.ownerId);
    if (job.deleted_at === null) throw new AppError('conflict', 'The chat is not deleted');
    if (await requestOf(trx, job.job_id)) throw new AppError('conflict', 'Permanent deletion of this chat was requested; it cannot be restored');
    await trx('agent_jobs').where({ job_id: job.job_id }).update({ deleted_at: null, updated_at: trx.fn.now() });
  });
}

/**
 * Requests permanent deletion of a soft-deleted chat (409 otherwise); answers the existing request
 * when there is one. `created` says whether this call made it.
 */
export async function requestPermanentDeletion(db: Db, input: { jobId: string; ownerId: number }): Promise<DeletionRequestView & { created: boolean }> {
  return db.transaction(async (trx) => {
    const job = await lockOwnedJob(trx, input.jobId, input.ownerId);
    if (job.deleted_at === null) {
      throw new AppError('conflict', 'Only a deleted chat can be deleted permanently: delete it first (DELETE without permanent=true)');
    }
    const existing = await requestOf(trx, job.job_id);
    if (existing) return { ...existing, created: false };
    const [row] = await trx('agent_deletion_requests')
      .insert({ id: newId('del'), job_id: job.job_id, owner_id: input.ownerId, group_id: job.group_id, state: 'pending' })
      .returning<Array<{ id: string; state: string; created_at: Date }>>(['id', 'state', 'created_at']);
    return { request_id: row!.id, state: row!.state, created_at: row!.created_at.toISOString(), created: true };
  });
}
