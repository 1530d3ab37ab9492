/**
 * Enrolled execution hosts (spec 3.5, 5.5): enrollment issues a per-host credential, stored
 * hashed; heartbeats report `slots_total`, runtime and capability attestations, and learn the
 * operator's saved slots (`slots_configured`) that a version-2 runner applies.
 */
import type { Db } from '../../lib/db';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { secretMatches } from '../../lib/identity/constant-time';
import { AppError } from '../../lib/errors';
import type { ValidRequestOf } from '../../lib/contracts/endpoint';
import type { hostHeartbeat } from '../../lib/contracts/host-api';
import { effectiveSlots } from './placement';

export const HOST_ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** A heartbeat as the API receives it (lib/contracts/host-api.ts). */
export type Heartbeat = ValidRequestOf<typeof hostHeartbeat>;

/** Enrolls (or re-enrolls, rotating the credential of, or bringing back a removed) host; returns the credential once. */
export async function enrollHost(db: Db, hostId: string): Promise<{ hostId: string; credential: string }> {
  if (!HOST_ID.test(hostId)) {
    throw new AppError('invalid_request', 'host id must be 1-63 of a-z, 0-9, ".", "_", "-", starting with a letter or digit', { param: 'host_id' });
  }
  const credential = generateSecret('ahc');
  await db('agent_hosts')
    .insert({ host_id: hostId, credential_hash: hashSecret(credential), credential_prefix: secretPrefix(credential), removal_requested_at: null, removed_at: null })
    .onConflict('host_id')
    .merge(['credential_hash', 'credential_prefix', 'removal_requested_at', 'removed_at']);
  return { hostId, credential };
}

/** Verifies a host credential; returns the host id it belongs to or throws 401. */
export async function authenticateHost(db: Db, hostId: string, credential: string | undefined): Promise<string> {
  const row = HOST_ID.test(hostId)
    ? await db('agent_hosts').where({ host_id: hostId }).whereNull('removed_at').first<{ credential_hash: string } | undefined>('credential_hash')
    : undefined;
  if (!row || !credential || !secretMatches(credential, row.credential_hash)) {
    throw new AppError('unauthorized', 'Invalid host credential');
  }
  return hostId;
}

/** What a heartbeat learns: the operator's saved slots (null: host default) and what admission uses. */
export interface HeartbeatAnswer {
  /** The saved number a runner of version 2 or later reports as `slots_total` from its next beat. */
  slots_configured: number | null;
  /** The lower of the saved number and the reported `slots_total`. */
  slots_effective: number;
}

/** Records a heartbeat; returns the saved slots and the slots admission uses. */
export async function recordHeartbeat(db: Db, hostId: string, beat: Heartbeat): Promise<HeartbeatAnswer> {
  const [row] = await db('agent_hosts')
    .where({ host_id: hostId })
    .whereNull('removed_at')
    .update({
      slots_total: beat.slots_total,
      runtime: beat.runtime,
      runner_version: beat.runner_version,
      capabilities: JSON.stringify(beat.capabilities),
      last_heartbeat_at: db.fn.now(),
    })
    .returning<Array<{ slots_saved: number | null; slots_total: number }>>(['slots_saved', 'slots_total']);
  if (!row) throw new AppError('unauthorized', 'Invalid host credential');
  return { slots_configured: row.slots_saved, slots_effective: effectiveSlots(row, beat.slots_total) };
}
