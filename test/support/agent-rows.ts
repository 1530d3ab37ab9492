/**
 * Agent rows for host tests, inserted directly: hosts with a heartbeat of a given age, owners,
 * jobs, turns and attempts (the jobs API is not what these tests exercise).
 */
import type { Db } from '../../lib/db';
import { hashSecret } from '../../lib/crypto';
import { createAttempt, createJob, createTurn } from './agent-records';

export interface HostRowOptions {
  slotsSaved?: number | null;
  slotsTotal?: number | null;
  /** Seconds since the last heartbeat; null: never heartbeated. Default 0 (just now). */
  heartbeatAgeSeconds?: number | null;
  runnerVersion?: string;
  removalRequested?: boolean;
  /** What the host attests (default: both execution profiles, as a host with gVisor and runc). */
  capabilities?: string[];
}

/** Inserts (or replaces) an `agent_hosts` row with an unusable credential. */
export async function insertHost(db: Db, hostId: string, options: HostRowOptions = {}): Promise<void> {
  const age = options.heartbeatAgeSeconds === undefined ? 0 : options.heartbeatAgeSeconds;
  await db('agent_hosts').insert({
    host_id: hostId,
    credential_hash: hashSecret(`unused-${hostId}`),
    credential_prefix: 'ahc_test',
    slots_saved: options.slotsSaved ?? null,
    slots_total: options.slotsTotal === undefined ? 3 : options.slotsTotal,
    runtime: 'docker-test',
    runner_version: options.runnerVersion ?? '2',
    capabilities: JSON.stringify(options.capabilities ?? ['container', 'untrusted-vm-v1', 'trusted-v1']),
    last_heartbeat_at: age === null ? null : db.raw('now() - make_interval(secs => ?)', [age]),
    removal_requested_at: options.removalRequested ? db.fn.now() : null,
  }).onConflict('host_id').merge();
}

/** An owner account row (`agent.use`). */
export { insertOwner } from './agent-grants';

/** A job with one queued turn; returns both ids. */
export async function insertJobWithTurn(db: Db, ownerId: number, hostId: string | null = null): Promise<{ jobId: string; turnId: string }> {
  const jobId = await createJob(db, ownerId, hostId);
  return { jobId, turnId: await createTurn(db, jobId, 1, 'queued') };
}

/** A `running` attempt of the turn on `hostId` (holds one of its slots). */
export function insertRunningAttempt(db: Db, ids: { jobId: string; turnId: string; hostId: string }): Promise<string> {
  return createAttempt(db, { ...ids, state: 'running' });
}
