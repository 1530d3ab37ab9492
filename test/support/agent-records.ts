/**
 * Agent control-plane rows for tests that exercise the event log: owners (a `users` row with
 * `agent.use` and an API key stored as its digest), jobs, turns and attempts inserted directly.
 */
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { newId } from '../../agent/jobs/job-store';

export interface TestOwner {
  userId: number;
  apiKey: string;
}

let emails = 0;

/** A user with `permissions` (default `agent.use`) and one API key. */
export async function createOwner(db: Db, permissions: string[] = ['agent.use']): Promise<TestOwner> {
  emails += 1;
  const [user] = await db('users')
    .insert({ email: `owner-${process.pid}-${emails}@example.test`, permissions, email_verified_at: db.fn.now() })
    .returning<Array<{ id: string }>>('id');
  const apiKey = generateSecret('sk');
  await db('api_keys').insert({ user_id: user!.id, name: 'test', key_hash: hashSecret(apiKey), prefix: secretPrefix(apiKey) });
  return { userId: Number(user!.id), apiKey };
}

/** A job (chat) of `ownerId`, placed on `hostId` when given. */
export async function createJob(db: Db, ownerId: number, hostId: string | null = null): Promise<string> {
  const jobId = newId('job');
  await db('agent_jobs').insert({ job_id: jobId, owner_id: ownerId, title: 'test job', model: 'test-model', host_id: hostId });
  return jobId;
}

/** A turn of `jobId` with `seq` in `state` (default `running`). */
export async function createTurn(db: Db, jobId: string, seq: number, state = 'running'): Promise<string> {
  const turnId = newId('turn');
  await db('agent_turns').insert({ turn_id: turnId, job_id: jobId, seq, prompt: `prompt ${seq}`, state });
  return turnId;
}

/** An attempt of a turn on `hostId` in `state` (default `running`), recorded as the turn's attempt. */
export async function createAttempt(db: Db, options: { jobId: string; turnId: string; hostId: string; state?: string }): Promise<string> {
  const attemptId = newId('att');
  await db('agent_attempts').insert({ attempt_id: attemptId, job_id: options.jobId, turn_id: options.turnId, host_id: options.hostId, state: options.state ?? 'running' });
  await db('agent_turns').where({ turn_id: options.turnId }).update({ attempt_id: attemptId });
  return attemptId;
}
