/**
 * Reading jobs (chats) for owners. An owner sees only their own jobs: every other job, deleted or
 * not, is reported exactly like a job that does not exist (404).
 */
import type { ExecutionProfile } from '../../lib/execution-profiles';
import { randomBytes } from 'node:crypto';
import type { Db } from '../../lib/db';
import type { AgentDriverKind } from '../../lib/settings';
import { AppError } from '../../lib/errors';

export interface JobRow {
  job_id: string;
  owner_id: string;
  title: string;
  title_source: string;
  model: string;
  repo: string | null;
  base_ref: string | null;
  base_sha: string | null;
  environment_id: string | null;
  env: Record<string, string>;
  driver: AgentDriverKind;
  /** The isolation its sandbox runs under (docs/execution-profiles.md); fixed at creation. */
  execution_profile: ExecutionProfile;
  host_id: string | null;
  group_id: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** A new readable, unguessable id: `<prefix>_<20 base32 characters>`. */
export function newId(prefix: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '';
  for (const byte of randomBytes(20)) out += alphabet[byte & 31];
  return `${prefix}_${out}`;
}

export const JOB_ID = /^job_[a-z2-7]{20}$/;

/** The owner's job, or 404 `Job not found` (also for other owners' and deleted jobs). */
export async function findOwnedJob(db: Db, jobId: string, ownerId: number): Promise<JobRow> {
  const row = JOB_ID.test(jobId)
    ? await db('agent_jobs').where({ job_id: jobId, owner_id: ownerId }).whereNull('deleted_at').first<JobRow | undefined>()
    : undefined;
  if (!row) throw new AppError('not_found', 'Job not found');
  return row;
}
