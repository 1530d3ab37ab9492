/**
 * What owners see of their chats: the job with its turns and `conversation_state`), and
 * paged lists of jobs (`temporary=true` lists only repo-less chats and cannot be combined with
 * `repo`).
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import type { JobRow } from './job-store';
import { waitMessage } from './wait-reasons';
import { pullRequestOf } from '../source/publications';

export type ConversationState = 'queued' | 'running' | 'idle' | 'failed';

export interface TurnView {
  turn_id: string;
  seq: number;
  state: string;
  result: string | null;
  error?: string;
  /** A queued turn's reason for waiting (docs/execution-profiles.md "Waiting turns"); absent otherwise. */
  waiting?: { reason: string; message: string };
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/**
 * The conversation status shown to owners: a running turn takes precedence over queued turns; with
 * no active turn the latest turn decides failed or idle (completed and user-stopped turns both
 * leave the chat idle).
 */
export function conversationState(turns: ReadonlyArray<{ seq: number; state: string }>): ConversationState {
  if (turns.some((t) => t.state === 'running')) return 'running';
  if (turns.some((t) => t.state === 'queued')) return 'queued';
  let latest: { seq: number; state: string } | undefined;
  for (const turn of turns) if (!latest || turn.seq > latest.seq) latest = turn;
  return latest?.state === 'failed' ? 'failed' : 'idle';
}

interface TurnRow {
  turn_id: string;
  seq: number;
  state: string;
  result: string | null;
  error: string | null;
  wait_reason: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function turnView(row: TurnRow): TurnView {
  return {
    turn_id: row.turn_id, seq: row.seq, state: row.state, result: row.result,
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.state === 'queued' && row.wait_reason !== null ? { waiting: { reason: row.wait_reason, message: waitMessage(row.wait_reason) } } : {}),
    created_at: row.created_at.toISOString(), started_at: iso(row.started_at), finished_at: iso(row.finished_at),
  };
}

export async function jobView(db: Db, job: JobRow) {
  const turns = await db('agent_turns').where({ job_id: job.job_id }).orderBy('seq', 'asc')
    .select<TurnRow[]>('turn_id', 'seq', 'state', 'result', 'error', 'wait_reason', 'created_at', 'started_at', 'finished_at');
  return {
    job_id: job.job_id,
    title: job.title,
    /** `prompt` (first line), `owner` (given) or `generated`: a UI may stop refreshing once generated. */
    title_source: job.title_source,
    model: job.model,
    repo: job.repo,
    base_ref: job.base_ref,
    base_sha: job.base_sha,
    environment_id: job.environment_id,
    execution_profile: job.execution_profile,
    temporary: job.repo === null,
    conversation_state: conversationState(turns),
    /** The chat's draft pull request once a turn was published (docs/publisher.md), else null. */
    pull_request: await pullRequestOf(db, job.job_id),
    created_at: job.created_at.toISOString(),
    updated_at: job.updated_at.toISOString(),
    turns: turns.map(turnView),
  };
}

export const listQuerySchema = z.object({
  temporary: z.enum(['true', 'false']).optional(),
  repo: z.string().min(1).max(512).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.string().regex(/^job_[a-z2-7]{20}$/, 'must be a job id').optional(),
}).strict().superRefine((q, ctx) => {
  if (q.temporary === 'true' && q.repo !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['repo'], message: 'cannot be combined with temporary=true' });
  }
});

interface ListedRow {
  job_id: string;
  title: string;
  model: string;
  repo: string | null;
  base_sha: string | null;
  created_at: Date;
  updated_at: Date;
  states: string[] | null;
  seqs: number[] | null;
}

/** The owner's jobs, newest first; `before` pages by the last job id of the previous page. */
export async function listJobs(db: Db, ownerId: number, query: z.infer<typeof listQuerySchema>) {
  const q = db('agent_jobs as j')
    .where('j.owner_id', ownerId).whereNull('j.deleted_at')
    .select<ListedRow[]>('j.job_id', 'j.title', 'j.model', 'j.repo', 'j.base_sha', 'j.created_at', 'j.updated_at',
      db.raw('(select array_agg(t.state order by t.seq) from agent_turns t where t.job_id = j.job_id) as states'),
      db.raw('(select array_agg(t.seq order by t.seq) from agent_turns t where t.job_id = j.job_id) as seqs'))
    .orderBy([{ column: 'j.created_at', order: 'desc' }, { column: 'j.job_id', order: 'desc' }])
    .limit(query.limit + 1);
  if (query.temporary === 'true') q.whereNull('j.repo');
  if (query.temporary === 'false') q.whereNotNull('j.repo');
  if (query.repo !== undefined) q.where('j.repo', query.repo);
  if (query.before !== undefined) {
    const anchor = await db('agent_jobs').where({ job_id: query.before, owner_id: ownerId }).first<{ created_at: Date } | undefined>('created_at');
    if (!anchor) throw new AppError('invalid_request', "Invalid field 'before': unknown job", { param: 'before' });
    q.where((w) => w.where('j.created_at', '<', anchor.created_at)
      .orWhere((x) => x.where('j.created_at', anchor.created_at).andWhere('j.job_id', '<', query.before!)));
  }
  const rows = await q;
  const page = rows.slice(0, query.limit);
  return {
    jobs: page.map((row) => ({
      job_id: row.job_id, title: row.title, model: row.model, repo: row.repo, base_sha: row.base_sha, temporary: row.repo === null,
      conversation_state: conversationState((row.states ?? []).map((state, i) => ({ state, seq: row.seqs?.[i] ?? i }))),
      created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
    })),
    next_before: rows.length > query.limit ? page[page.length - 1]!.job_id : null,
  };
}
