/**
 * The deletion sweep's work on `agent_deletion_requests` (docs/chat-deletion.md): claim the next
 * due request under a lease, purge the chat's records, and end the attempt as `done` or `failed`
 * (tried again `retrySeconds` later). Every step writes its audit row (category `deletion`, actor
 * `user-deletion-sweeper`, source `system`) in the transaction that makes the change.
 *
 * Never losing a request: a claim sets `running` with `lease_expires_at`; a sweep that dies
 * mid-request (worker killed, run terminated) leaves the request `running`, and once its lease has
 * expired the next sweep claims it again (`FOR UPDATE SKIP LOCKED`, so two sweeps never take the
 * same request). Each claim increments `attempts`, and every later write of that attempt names it:
 * a sweep whose lease was taken over changes nothing any more.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { cleanText } from '../../lib/text';
import { recordAudit, USER_DELETION_SWEEPER, type AuditAction, type AuditOutcome } from '../audit/audit-log';

/** A claimed request: the attempt number is the fence of every later write. */
export interface ClaimedDeletion {
  requestId: string;
  jobId: string;
  ownerId: number;
  groupId: string | null;
  attempt: number;
}

/** How the sandbox part of a request ended (recorded in the completion's audit row). */
export type SandboxEnding =
  /** The chat never had a sandbox group. */
  | 'none'
  /** Other chats remain members of the group: it keeps running for them. */
  | 'kept'
  /** The group's container was stopped and deleted (or the group was already deleted). */
  | 'deleted'
  /** The group was archived to object storage and its container removed (`archive_delete`; or it was already cold). */
  | 'archived'
  /** The group has no recorded container (its first turn never recorded one): nothing to stop. */
  | 'no_container';

const MAX_ERROR_CHARS = 2000;

async function audit(db: Knex | Knex.Transaction, entry: { action: AuditAction; outcome: AuditOutcome; jobId: string; reason?: string; details: Record<string, unknown> }): Promise<void> {
  await recordAudit(db, {
    actor: USER_DELETION_SWEEPER, category: 'deletion', action: entry.action, outcome: entry.outcome,
    target: { type: 'chat', id: entry.jobId }, reason: entry.reason ?? null, details: entry.details,
  });
}

interface RequestRow {
  id: string;
  job_id: string;
  owner_id: string;
  group_id: string | null;
  attempts: number;
  previous_state: string;
}

/**
 * Claims the next due request: `pending`/`failed` whose `next_attempt_at` has come, or `running`
 * whose lease expired (its sweep died). Oldest due first; none → undefined. A request taken over
 * from an expired lease writes an audit row saying so.
 */
export async function claimDueDeletion(db: Db, input: { leaseSeconds: number }): Promise<ClaimedDeletion | undefined> {
  return db.transaction(async (trx) => {
    const result = await trx.raw<{ rows: RequestRow[] }>(`
      with due as (
        select id, state from agent_deletion_requests
        where (state in ('pending', 'failed') and next_attempt_at <= now()) or (state = 'running' and lease_expires_at <= now())
        order by next_attempt_at, created_at, id
        limit 1
        for update skip locked
      )
      update agent_deletion_requests r
      set state = 'running', attempts = r.attempts + 1, lease_expires_at = now() + make_interval(secs => ?), updated_at = now()
      from due where r.id = due.id
      returning r.id, r.job_id, r.owner_id, r.group_id, r.attempts, due.state as previous_state
    `, [input.leaseSeconds]);
    const row = result.rows[0];
    if (!row) return undefined;
    if (row.previous_state === 'running') {
      await audit(trx, {
        action: 'agent.chat.deletion_attempt', outcome: 'failed', jobId: row.job_id,
        reason: 'The previous attempt did not finish within its lease (its sweep stopped); taken again',
        details: { request_id: row.id, attempt: row.attempts - 1 },
      });
    }
    return { requestId: row.id, jobId: row.job_id, ownerId: Number(row.owner_id), groupId: row.group_id, attempt: row.attempts };
  });
}

/** Locks the request when attempt `attempt` still holds it (else another sweep took it over). */
async function lockAttempt(trx: Knex.Transaction, claim: { requestId: string; attempt: number }): Promise<boolean> {
  const row: unknown = await trx('agent_deletion_requests').where({ id: claim.requestId, state: 'running', attempts: claim.attempt }).forUpdate().first('id');
  return row !== undefined;
}

export type PurgeResult =
  | { kind: 'purged'; counts: Record<string, number> }
  /** Purged by an earlier attempt. */
  | { kind: 'already_purged' }
  /** A turn of the chat is still active (asked to stop at the soft delete): try again later. */
  | { kind: 'busy'; reason: string }
  /** This attempt no longer holds the request. */
  | { kind: 'fenced' };

/** Tables holding a chat's records, deleted children first (the job row last). */
const CHAT_TABLES = [
  'agent_native_questions', 'agent_events', 'agent_attempts', 'agent_turns', 'agent_grants', 'agent_sandbox_members',
  'agent_mcp_credentials', 'agent_mcp_approvals', 'agent_mcp_legacy_bindings', 'agent_mcp_bindings', 'agent_jobs',
] as const;

/**
 * Deletes the chat's records in one transaction: native questions, events, attempts, turns, its grant rows, its
 * sandbox membership, its MCP bindings, approvals and tool-relay credentials, and the job row. The audit log, the deletion request and the sandbox group's
 * row are kept. Refused (`busy`) while a turn is still queued or running.
 */
export async function purgeDeletedChat(db: Db, claim: ClaimedDeletion): Promise<PurgeResult> {
  return db.transaction(async (trx): Promise<PurgeResult> => {
    if (!(await lockAttempt(trx, claim))) return { kind: 'fenced' };
    const job = await trx('agent_jobs').where({ job_id: claim.jobId }).forUpdate().first<{ deleted_at: Date | null } | undefined>('deleted_at');
    if (!job) {
      await trx('agent_deletion_requests').where({ id: claim.requestId }).whereNull('purged_at').update({ purged_at: trx.fn.now(), updated_at: trx.fn.now() });
      return { kind: 'already_purged' };
    }
    // Restore refuses once a request exists, so this is a record changed by hand: do not delete it.
    if (job.deleted_at === null) return { kind: 'busy', reason: 'The chat is no longer soft-deleted' };
    const [active] = await trx('agent_turns').where({ job_id: claim.jobId }).whereIn('state', ['queued', 'running']).count<Array<{ count: string }>>({ count: '*' });
    if (Number(active!.count) > 0) return { kind: 'busy', reason: 'A turn of the chat is still running; it was asked to stop when the chat was deleted' };
    const counts: Record<string, number> = {};
    for (const table of CHAT_TABLES) counts[table] = await trx(table).where({ job_id: claim.jobId }).delete();
    await trx('agent_deletion_requests').where({ id: claim.requestId }).update({ purged_at: trx.fn.now(), updated_at: trx.fn.now() });
    await audit(trx, {
      action: 'agent.chat.purged', outcome: 'succeeded', jobId: claim.jobId,
      details: { request_id: claim.requestId, attempt: claim.attempt, owner_id: claim.ownerId, group_id: claim.groupId, deleted_rows: counts },
    });
    return { kind: 'purged', counts };
  });
}

/** Ends the attempt: `done`. False when this attempt no longer holds the request. */
export async function finishDeletion(db: Db, input: ClaimedDeletion & { sandbox: SandboxEnding }): Promise<boolean> {
  return db.transaction(async (trx) => {
    if (!(await lockAttempt(trx, input))) return false;
    await trx('agent_deletion_requests').where({ id: input.requestId })
      .update({ state: 'done', lease_expires_at: null, last_error: null, finished_at: trx.fn.now(), updated_at: trx.fn.now() });
    await audit(trx, {
      action: 'agent.chat.deletion_completed', outcome: 'succeeded', jobId: input.jobId,
      details: { request_id: input.requestId, attempts: input.attempt, group_id: input.groupId, sandbox: input.sandbox },
    });
    return true;
  });
}

/**
 * Ends the attempt as `failed`: tried again `retrySeconds` later (a minute by default), with the error
 * kept in `last_error` and the audit row. False when this attempt no longer holds the request.
 */
export async function failDeletion(db: Db, input: ClaimedDeletion & { error: string; retrySeconds: number }): Promise<boolean> {
  const clean = cleanText(input.error);
  const error = clean.length > MAX_ERROR_CHARS ? `${cleanText(clean.slice(0, MAX_ERROR_CHARS - 1))}…` : clean;
  return db.transaction(async (trx) => {
    if (!(await lockAttempt(trx, input))) return false;
    const [row] = await trx('agent_deletion_requests').where({ id: input.requestId })
      .update({
        state: 'failed', lease_expires_at: null, last_error: error, updated_at: trx.fn.now(),
        next_attempt_at: trx.raw('now() + make_interval(secs => ?)', [input.retrySeconds]),
      }).returning<Array<{ next_attempt_at: Date }>>('next_attempt_at');
    await audit(trx, {
      action: 'agent.chat.deletion_attempt', outcome: 'failed', jobId: input.jobId, reason: error,
      details: { request_id: input.requestId, attempt: input.attempt, next_attempt_at: row!.next_attempt_at.toISOString() },
    });
    return true;
  });
}
