/**
 * The publisher's state in PostgreSQL (docs/publisher.md "Publish"): which turns' patches wait to
 * become a commit and a draft pull request, what each publication did, and what the owner is told.
 * A patch is `pending` from its upload until its publication ends `published` or `failed`; each end
 * appends one event to the chat's log in the same transaction (`pull_request`, or `publish_failed`
 * with a reason code and a sentence for the owner), deduplicated per turn, so a retried activity
 * changes nothing. A turn that did not complete never publishes: its pending patch becomes `none`.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { cleanText } from '../../lib/text';
import { appendEvents } from '../events/event-store';
import type { TurnPatch } from './turn-patches';

/** Why a publication failed or was skipped (the `reason` of a `publish_failed` event). */
export type PublishFailureReason = 'patch_too_large' | 'capture_failed' | 'gate_refused' | 'unsupported_repo' | 'forge_error';

/** The longest owner-facing failure message stored. */
const MESSAGE_MAX_CHARS = 1000;

/** The branch a chat's turns are published on. */
export function branchOf(jobId: string): string {
  return `agent/${jobId}`;
}

/** What the publisher reads about a turn's patch and its chat. */
export interface PublishContext {
  patch: TurnPatch;
  turnState: string;
  job: { job_id: string; owner_id: string; repo: string | null; base_ref: string | null; base_sha: string | null; model: string; title: string; deleted_at: Date | null };
  /** The chat's first prompt (for the fallback PR title). */
  firstPrompt: string;
}

/**
 * The patch of `turnId` with its turn's state and its chat; undefined when there is none. Without
 * `withPatch` the patch's bytes are not read (`patch` is null): the readiness check polls this.
 */
export async function publishContext(db: Db, turnId: string, options: { withPatch?: boolean } = {}): Promise<PublishContext | undefined> {
  const patch = await db('agent_turn_patches').where({ turn_id: turnId }).first<TurnPatch | undefined>(
    'turn_id', 'attempt_id', 'job_id', 'turn_seq', 'capture_state', 'start_tree', 'end_tree', 'bytes', options.withPatch ? 'patch' : db.raw('null as patch'),
    'publish_state', 'publish_error', 'commit_sha');
  if (!patch) return undefined;
  const turn = await db('agent_turns').where({ turn_id: turnId }).first<{ state: string }>('state');
  const job = await db('agent_jobs').where({ job_id: patch.job_id })
    .first<PublishContext['job']>('job_id', 'owner_id', 'repo', 'base_ref', 'base_sha', 'model', 'title', 'deleted_at');
  const first = await db('agent_turns').where({ job_id: patch.job_id }).orderBy('seq', 'asc').first<{ prompt: string } | undefined>('prompt');
  if (!turn || !job) return undefined;
  return { patch, turnState: turn.state, job, firstPrompt: first?.prompt ?? '' };
}

/** Whether an earlier turn of the chat still waits to be published (turns publish in order). */
export async function earlierPublishPending(db: Db, jobId: string, turnSeq: number): Promise<boolean> {
  const row: unknown = await db('agent_turn_patches').where({ job_id: jobId, publish_state: 'pending' }).where('turn_seq', '<', turnSeq).first(db.raw('1 as pending'));
  return row !== undefined;
}

/** A published turn: its commit and the chat's pull request. */
export interface PublishedTurn {
  turnId: string;
  branch: string;
  commitSha: string;
  pullRequest: { number: number; url: string; draft: boolean };
}

/** pending → published, with the `pull_request` event; false when it was not pending (already settled). */
export async function recordPublished(db: Db, input: PublishedTurn): Promise<boolean> {
  return db.transaction(async (trx) => {
    const rows = await trx('agent_turn_patches').where({ turn_id: input.turnId, publish_state: 'pending' }).update({
      publish_state: 'published', branch: input.branch, commit_sha: input.commitSha, pr_number: input.pullRequest.number,
      pr_url: cleanText(input.pullRequest.url), pr_draft: input.pullRequest.draft, published_at: trx.fn.now(),
    }).returning<Array<{ job_id: string; turn_seq: number }>>(['job_id', 'turn_seq']);
    const row = rows[0];
    if (!row) return false;
    await appendEvents(trx, row.job_id, [{
      turnSeq: row.turn_seq, attemptId: null, seq: 0, eventType: 'pull_request', dedupeKey: `publish:${input.turnId}:pull_request`,
      payload: { url: cleanText(input.pullRequest.url), number: input.pullRequest.number, branch: input.branch, draft: input.pullRequest.draft, commit_sha: input.commitSha },
    }]);
    return true;
  });
}

/** The `publish_failed` event of a turn (once per turn). */
async function failureEvent(trx: Knex.Transaction, row: { job_id: string; turn_seq: number; turn_id: string }, reason: PublishFailureReason, message: string): Promise<void> {
  await appendEvents(trx, row.job_id, [{
    turnSeq: row.turn_seq, attemptId: null, seq: 0, eventType: 'publish_failed', isError: true, dedupeKey: `publish:${row.turn_id}:publish_failed`,
    payload: { reason, message },
  }]);
}

/** pending → failed, with the `publish_failed` event; false when it was not pending. */
export async function recordPublishFailed(db: Db, input: { turnId: string; reason: PublishFailureReason; message: string }): Promise<boolean> {
  const message = cleanText(input.message).slice(0, MESSAGE_MAX_CHARS);
  return db.transaction(async (trx) => {
    const rows = await trx('agent_turn_patches').where({ turn_id: input.turnId, publish_state: 'pending' })
      .update({ publish_state: 'failed', publish_error: message }).returning<Array<{ job_id: string; turn_seq: number }>>(['job_id', 'turn_seq']);
    const row = rows[0];
    if (!row) return false;
    await failureEvent(trx, { ...row, turn_id: input.turnId }, input.reason, message);
    return true;
  });
}

/** Tells the owner, at upload, that a turn's diff will not be published (too large, or not captured). */
export async function noteUnpublishable(trx: Knex.Transaction, row: { job_id: string; turn_seq: number; turn_id: string }, upload: { status: 'too_large'; bytes: number; maxBytes: number } | { status: 'failed'; error: string }): Promise<void> {
  if (upload.status === 'too_large') {
    const size = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);
    await failureEvent(trx, row, 'patch_too_large', `The turn's changes (${size(upload.bytes)} of diff) are larger than the ${size(upload.maxBytes)} that can be published; nothing was pushed`);
  } else {
    await failureEvent(trx, row, 'capture_failed', `The turn's changes could not be captured, so nothing was pushed: ${cleanText(upload.error).slice(0, 500)}`);
  }
}

/** A turn that ended other than completed publishes nothing: its pending patch becomes `none`. */
export async function dropUnfinishedPublication(trx: Knex.Transaction, attemptId: string): Promise<void> {
  await trx('agent_turn_patches').where({ attempt_id: attemptId, publish_state: 'pending' })
    .whereNotExists((q) => q.select(trx.raw('1')).from('agent_turns as t').whereRaw('t.turn_id = agent_turn_patches.turn_id').where('t.state', 'completed'))
    .update({ publish_state: 'none' });
}

/** Pending patches of completed turns uploaded at least `minAgeSeconds` ago (the reconciler's work), oldest first. */
export async function pendingPublications(db: Db, minAgeSeconds: number, limit = 200): Promise<Array<{ turn_id: string; job_id: string; owner_id: string }>> {
  return db('agent_turn_patches as p').join('agent_turns as t', 't.turn_id', 'p.turn_id').join('agent_jobs as j', 'j.job_id', 'p.job_id')
    .where('p.publish_state', 'pending').where('t.state', 'completed').whereNull('j.deleted_at')
    .where('p.created_at', '<', db.raw('now() - make_interval(secs => ?)', [minAgeSeconds]))
    .orderBy('p.created_at', 'asc').limit(limit)
    .select<Array<{ turn_id: string; job_id: string; owner_id: string }>>('p.turn_id', 'p.job_id', 'j.owner_id');
}

/** The chat's pull request as its owner sees it (the latest published turn's), or null. */
export async function pullRequestOf(db: Db, jobId: string): Promise<{ url: string; number: number; branch: string; draft: boolean } | null> {
  const row = await db('agent_turn_patches').where({ job_id: jobId, publish_state: 'published' }).orderBy('turn_seq', 'desc')
    .first<{ pr_url: string; pr_number: number; branch: string; pr_draft: boolean } | undefined>('pr_url', 'pr_number', 'branch', 'pr_draft');
  return row ? { url: row.pr_url, number: row.pr_number, branch: row.branch, draft: row.pr_draft } : null;
}
