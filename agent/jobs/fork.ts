/**
 * Forking a chat at one of its completed turns (the anchor; docs/sandboxes.md "Forks"): the fork is
 * a new chat of the same owner, with the original's repository, base, model, driver, environment
 * and execution profile, and a new member of the original's sandbox group: the same container and
 * `/workspace`, its own fixed UID (the next free one) and home, where its native session is made
 * from the original's, cut at the anchor, when its first turn runs.
 *
 * Everything is decided in one transaction under the original's job row and its group's row (the
 * lock an operator action and admission take), so a fork never races a stop, archive or delete
 * into a state the rules below do not cover.
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { FORK_AT_ANCHOR_MIN_VERSION } from '../../lib/execution-profiles';
import { newId, type JobRow } from './job-store';
import { PROMPT_MAX_CHARS } from './job-commands';
import { cutToChars } from './titles';
import { queueTurn, type QueuedTurn } from './turn-transitions';

export const forkSchema = z.object({
  /** The turn the fork starts after: a completed turn of the chat, by its `seq`. */
  anchor_seq: z.number().int().min(1).max(2_147_483_647),
  /** The fork's first turn, queued at once; absent: the fork waits for the owner's first turn. */
  prompt: z.string().trim().min(1, 'must not be empty').max(PROMPT_MAX_CHARS).optional(),
  title: z.string().trim().min(1).max(200).optional(),
}).strict();

export type ForkBody = z.infer<typeof forkSchema>;

export interface ForkResult {
  job: JobRow & { forked_from_job_id: string; fork_anchor_turn_id: string; fork_anchor_seq: number; fork_historical: boolean };
  uid: number;
  turn: QueuedTurn | null;
}

/** Group states a fork is refused in, with what the owner can do about it. */
function refusedGroupState(state: string, jobId: string): string | null {
  if (state === 'cold') {
    return `This chat's sandbox is archived (cold); restore it first by sending a turn to chat ${jobId}, then fork once that turn has started`;
  }
  if (state === 'deleted') return `This chat's sandbox was deleted by an operator; a fork needs its workspace`;
  return null;
}

/**
 * Why a fork at an earlier turn (not the chat's latest) cannot be made: a session can be cut back
 * to a turn only in a group whose sessions mark their turns (the built-in driver's since version
 * 3, Codex's and Claude Code's since version 4).
 */
function refusedHistorical(job: JobRow, forkHelperVersion: number, seq: number): string | null {
  const needed = job.driver === 'builtin' ? FORK_AT_ANCHOR_MIN_VERSION.builtin : FORK_AT_ANCHOR_MIN_VERSION.cli;
  if (forkHelperVersion < needed) {
    const what = job.driver === 'builtin' ? 'forks at an earlier turn' : `forks of a ${job.driver} session at an earlier turn`;
    return `Turn ${seq} is not this chat's latest turn, and this chat's sandbox predates ${what} (fork helper version ${forkHelperVersion}, ${needed} needed); fork at the latest turn`;
  }
  return null;
}

/** The anchor turn: completed, of this chat; and whether any turn came after it (a historical fork). */
async function findAnchor(trx: Knex.Transaction, jobId: string, seq: number): Promise<{ turnId: string; historical: boolean }> {
  const turn = await trx('agent_turns').where({ job_id: jobId, seq }).first<{ turn_id: string; state: string } | undefined>('turn_id', 'state');
  if (!turn) throw new AppError('invalid_request', `Invalid field 'anchor_seq': turn ${seq} does not exist in this chat`, { param: 'anchor_seq' });
  if (turn.state !== 'completed') {
    throw new AppError('conflict', `Turn ${seq} is ${turn.state}; only a completed turn can anchor a fork`);
  }
  const later: unknown = await trx('agent_turns').where({ job_id: jobId }).where('seq', '>', seq).first(trx.raw('1 as present'));
  return { turnId: turn.turn_id, historical: later !== undefined };
}

/**
 * Forks `original` at turn `body.anchor_seq`. 404 once the chat is deleted; 400 for an anchor that
 * is no turn of it; 409 for an anchor not completed, a cold or deleted sandbox, a group already
 * holding `sessionsPerSandbox` members, or a historical fork its driver or group cannot make. A stop, archive or delete in progress does not refuse the
 * fork: its first turn waits for it (wait reason `sandbox_pending`), like the original's would.
 */
export async function forkChat(db: Db, original: JobRow, body: ForkBody, limits: { sessionsPerSandbox: number }): Promise<ForkResult> {
  return db.transaction(async (trx) => {
    const job = await trx('agent_jobs').where({ job_id: original.job_id }).whereNull('deleted_at').forUpdate().first<JobRow | undefined>();
    if (!job) throw new AppError('not_found', 'Job not found');
    const anchor = await findAnchor(trx, job.job_id, body.anchor_seq);
    // A completed turn was admitted, so the chat has its group; a missing one is a record gone by hand.
    const group = job.group_id
      ? await trx('agent_sandboxes').where({ group_id: job.group_id }).forUpdate()
        .first<{ state: string; host_id: string; fork_helper_version: number } | undefined>('state', 'host_id', 'fork_helper_version')
      : undefined;
    if (!job.group_id || !group) throw new AppError('conflict', "This chat's sandbox record is missing; it cannot be forked");
    const refused = refusedGroupState(group.state, job.job_id) ?? (anchor.historical ? refusedHistorical(job, group.fork_helper_version, body.anchor_seq) : null);
    if (refused) throw new AppError('conflict', refused);
    const members = await trx('agent_sandbox_members').where({ group_id: job.group_id }).select<Array<{ uid: number }>>('uid');
    if (members.length >= limits.sessionsPerSandbox) {
      throw new AppError('conflict', `This chat's sandbox already holds ${members.length} chats, the limit sessions_per_sandbox (${limits.sessionsPerSandbox}); delete a fork or ask an operator to raise it`);
    }
    const uid = Math.max(...members.map((m) => m.uid)) + 1;
    const forkId = newId('job');
    const [fork] = await trx('agent_jobs').insert({
      job_id: forkId, owner_id: job.owner_id,
      title: body.title ? cutToChars(body.title, 200) : cutToChars(`Fork of ${job.title}`, 200),
      title_source: body.title ? 'owner' : 'prompt',
      model: job.model, repo: job.repo, base_ref: job.base_ref, base_sha: job.base_sha, environment_id: job.environment_id,
      env: JSON.stringify(job.env), driver: job.driver, execution_profile: job.execution_profile,
      host_id: group.host_id, group_id: job.group_id,
      forked_from_job_id: job.job_id, fork_anchor_turn_id: anchor.turnId, fork_anchor_seq: body.anchor_seq, fork_historical: anchor.historical,
    }).returning<ForkResult['job'][]>('*');
    await trx('agent_sandbox_members').insert({ job_id: forkId, group_id: job.group_id, uid });
    const turn = body.prompt ? await queueTurn(trx, { jobId: forkId, seq: 1, prompt: body.prompt }) : null;
    return { job: fork!, uid, turn };
  });
}
