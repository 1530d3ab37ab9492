/**
 * Repository credentials of a running attempt (docs/forges.md "Credentials on the host"): the
 * read-only clone credential the host runner asks for while preparing the sandbox, and the
 * short-lived repo token (`SCM_TOKEN`) put in the agent's environment when the deployment's
 * source-control app is configured. Both are minted by the forge that serves the job's repository
 * (activities/forge/, composed in api/main.ts) and only for the attempt currently leased to the
 * asking host: any other attempt, an ended one or another host's, gets 409 and nothing is minted.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';

/** A minted credential: the secret and when it stops working. */
export interface RepoToken {
  token: string;
  expiresAt: Date;
}

/** Mints credentials for a job's `repo` string through the forge that serves it. */
export interface RepoCredentials {
  /** Read-only, this one repository; undefined when no configured forge serves `repo`. */
  cloneToken(repo: string): Promise<RepoToken | undefined>;
  /**
   * Contents and pull-request write on this one repository, about an hour; undefined when no
   * configured forge serves `repo`. Absent when repo tokens are not issued (no source-control app).
   */
  repoToken?: (repo: string) => Promise<RepoToken | undefined>;
}

/** The repository of the job of `attemptId` when that attempt is running on `hostId`; 409 otherwise. */
export async function leasedAttemptRepo(db: Db, input: { hostId: string; attemptId: string }): Promise<string | null> {
  const row = await db('agent_attempts as a').join('agent_jobs as j', 'j.job_id', 'a.job_id')
    .where('a.attempt_id', input.attemptId)
    .first<{ host_id: string; state: string; repo: string | null } | undefined>('a.host_id', 'a.state', 'j.repo');
  if (!row || row.host_id !== input.hostId || row.state !== 'running') throw new AppError('conflict', 'Attempt is not current');
  return row.repo;
}

/** The clone credential of the attempt's repository (null token: no repository, or no forge serves it). */
export async function attemptCloneCredential(
  db: Db, credentials: RepoCredentials | undefined, input: { hostId: string; attemptId: string },
): Promise<{ token: string | null; expires_at: string | null }> {
  const repo = await leasedAttemptRepo(db, input);
  const minted = repo && credentials ? await credentials.cloneToken(repo) : undefined;
  return minted ? { token: minted.token, expires_at: minted.expiresAt.toISOString() } : { token: null, expires_at: null };
}

/** `SCM_TOKEN` for the attempt's environment, when repo tokens are issued and a forge serves its repository. */
export async function attemptScmToken(db: Db, credentials: RepoCredentials | undefined, input: { hostId: string; attemptId: string }): Promise<string | undefined> {
  if (!credentials?.repoToken) return undefined;
  const repo = await leasedAttemptRepo(db, input);
  return repo ? (await credentials.repoToken(repo))?.token : undefined;
}
