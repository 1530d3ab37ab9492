/**
 * Owners' writes to chats: create a job with its first turn, append a turn, cancel a turn. Each is
 * one PostgreSQL transaction (the record is durable before anything is sent to Temporal); the
 * chat workflow is then told by Update-with-Start. If Temporal cannot be reached the turn stays
 * queued in PostgreSQL and the control worker's reconciler delivers it later: nothing is lost.
 */
import { z } from 'zod';
import { AGENT_DRIVERS, type AgentDriverKind } from '../../lib/settings';
import { EXECUTION_PROFILES, type ExecutionProfile } from '../../lib/execution-profiles';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { newId, type JobRow } from './job-store';
import { titleFromPrompt, cutToChars } from './titles';
import { cancelTurn as cancelTurnTransition, queueTurn, type QueuedTurn } from './turn-transitions';

export const PROMPT_MAX_CHARS = 32_000;

/** True for a URL with a user name or password in it (kept out of records, logs and workflow history). */
function hasUserinfo(repo: string): boolean {
  if (!repo.includes('@') || !repo.includes('://')) return false;
  try {
    const url = new URL(repo);
    return url.username !== '' || url.password !== '';
  } catch {
    return false;
  }
}
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const prompt = z.string().trim().min(1, 'must not be empty').max(PROMPT_MAX_CHARS);
const ref = z.string().min(1).max(255).regex(/^[^\s\0]+$/, 'must not contain whitespace');

export const createJobSchema = z.object({
  prompt,
  model: z.string().min(1).max(256),
  // Required but nullable: a job either names its repository or asks for a temporary workspace with `null`.
  repo: z.string({ error: (issue) => (issue.input === undefined ? 'is required: the repository to work on, or null for a temporary workspace' : undefined) })
    .min(1).max(512).refine((repo) => !hasUserinfo(repo), 'must not carry credentials (user:password@); access comes from the deployment').nullable(),
  base_ref: ref.optional(),
  base_sha: z.string().regex(/^[0-9a-f]{7,64}$/, 'must be a hex commit id').optional(),
  environment_id: z.string().min(1).max(128).optional(),
  title: z.string().trim().min(1).max(200).optional(),
  env: z.record(z.string().regex(ENV_NAME, 'environment variable names are letters, digits and _'), z.string().max(32_768))
    .refine((env) => Object.keys(env).length <= 64, 'at most 64 variables').optional(),
  driver: z.enum(AGENT_DRIVERS).optional(),
  /** `untrusted-vm-v1` or `trusted-v1` (reviewed repositories only); absent: the deployment's choice (agent/sandboxes/execution-profile.ts). */
  execution_profile: z.enum(EXECUTION_PROFILES).optional(),
}).strict().superRefine((body, ctx) => {
  if (body.repo !== null) return;
  for (const field of ['base_ref', 'base_sha', 'environment_id'] as const) {
    if (body[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `cannot be combined with repo: null (a temporary workspace has no ${field})` });
  }
});

export const addTurnSchema = z.object({ prompt }).strict();

export type CreateJobBody = z.infer<typeof createJobSchema>;

export type { QueuedTurn };

/** Creates a job and its first turn. */
export async function createJob(db: Db, input: {
  ownerId: number; body: CreateJobBody; defaultDriver: AgentDriverKind;
  /** Chosen by the caller from the request, the deployment default and the trusted repositories. */
  executionProfile: ExecutionProfile;
}): Promise<{ job: JobRow; turn: QueuedTurn }> {
  const { body } = input;
  const jobId = newId('job');
  return db.transaction(async (trx) => {
    const [job] = await trx('agent_jobs').insert({
      job_id: jobId,
      owner_id: input.ownerId,
      title: body.title ? cutToChars(body.title, 200) : titleFromPrompt(body.prompt),
      title_source: body.title ? 'owner' : 'prompt',
      model: body.model,
      repo: body.repo,
      base_ref: body.base_ref ?? null,
      base_sha: body.base_sha ?? null,
      environment_id: body.environment_id ?? null,
      env: JSON.stringify(body.env ?? {}),
      driver: body.driver ?? input.defaultDriver,
      execution_profile: input.executionProfile,
    }).returning<JobRow[]>('*');
    const turn = await queueTurn(trx, { jobId, seq: 1, prompt: body.prompt });
    return { job: job!, turn };
  });
}

/** Appends a turn to the owner's job (seq = last + 1, allocated under the job's row lock); 404 once the chat is deleted. */
export async function addTurn(db: Db, job: JobRow, text: string): Promise<QueuedTurn> {
  return db.transaction(async (trx) => {
    // Under the job's lock: a chat soft-deleted since it was read takes no new turn (agent/deletion/chat-deletion.ts).
    const locked = await trx('agent_jobs').where({ job_id: job.job_id }).whereNull('deleted_at').forUpdate().first<{ job_id: string } | undefined>('job_id');
    if (!locked) throw new AppError('not_found', 'Job not found');
    const last = await trx('agent_turns').where({ job_id: job.job_id }).max<{ max: number | null }>('seq as max').first();
    const turn = await queueTurn(trx, { jobId: job.job_id, seq: (last?.max ?? 0) + 1, prompt: text });
    await trx('agent_jobs').where({ job_id: job.job_id }).update({ updated_at: trx.fn.now() });
    return turn;
  });
}

export interface CancelOutcome {
  turn_id: string;
  seq: number;
  /** `cancelled` for a queued turn; `running` with `cancel_requested: true` while a running turn stops. */
  state: string;
  cancel_requested: boolean;
}

/**
 * Cancels turn `seq`: a queued turn becomes `cancelled` at once (later turns still wait for their
 * turn: they never overtake); a running turn is marked and the caller signals the workflow to stop
 * it. A finished turn answers 409.
 */
export async function cancelTurn(db: Db, job: JobRow, seq: number): Promise<CancelOutcome> {
  const result = await db.transaction((trx) => cancelTurnTransition(trx, { jobId: job.job_id, seq }));
  switch (result.kind) {
    case 'cancelled': return { turn_id: result.turn_id, seq, state: 'cancelled', cancel_requested: true };
    case 'cancel_requested': return { turn_id: result.turn_id, seq, state: 'running', cancel_requested: true };
    case 'not_found': throw new AppError('not_found', `Turn ${seq} not found`);
    case 'finished': throw new AppError('conflict', `Turn ${seq} is already ${result.state}`);
  }
}
