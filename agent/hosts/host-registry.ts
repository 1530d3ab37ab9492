/**
 * Enrolled execution hosts (docs/agent-hosts.md; no shared dispatcher token): enrollment issues a
 * per-host credential, stored hashed; heartbeats report `slots_total`, runtime and capability
 * attestations, and learn the operator's saved slots (`slots_configured`) that a version-2 runner
 * applies.
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
    .insert({ host_id: hostId, credential_hash: hashSecret(credential), credential_prefix: secretPrefix(credential), removal_requested_at: null, removal_requested_by: null, removed_at: null })
    .onConflict('host_id')
    .merge(['credential_hash', 'credential_prefix', 'removal_requested_at', 'removal_requested_by', 'removed_at']);
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

/** A recorded heartbeat: the runner's answer, and what the beat changed that the host workflow waits for. */
export interface HeartbeatRecord {
  answer: HeartbeatAnswer;
  /** Whether the host was online (a beat within `staleSeconds`) before this beat. */
  wasOnline: boolean;
  /** The `slots_total` the previous beat reported (null: none yet). */
  previousSlotsTotal: number | null;
  /** The prefix of the credential the host is enrolled with (changes when it is enrolled again). */
  credentialPrefix: string;
}

/** Records a heartbeat (the host row locked, so the previous beat is read exactly); returns the saved slots and the slots admission uses. */
export async function recordHeartbeat(db: Db, hostId: string, beat: Heartbeat, staleSeconds: number): Promise<HeartbeatRecord> {
  return db.transaction(async (trx) => {
    const previous = await trx('agent_hosts')
      .where({ host_id: hostId })
      .whereNull('removed_at')
      .forUpdate()
      .first<{ slots_saved: number | null; slots_total: number | null; credential_prefix: string; was_online: boolean } | undefined>(
        'slots_saved', 'slots_total', 'credential_prefix',
        trx.raw('coalesce(last_heartbeat_at > now() - make_interval(secs => ?), false) as was_online', [staleSeconds]),
      );
    if (!previous) throw new AppError('unauthorized', 'Invalid host credential');
    await trx('agent_hosts').where({ host_id: hostId }).update({
      slots_total: beat.slots_total,
      runtime: beat.runtime,
      runner_version: beat.runner_version,
      capabilities: JSON.stringify(beat.capabilities),
      // An older runner reports no preflight: what it reported before is no longer known to hold.
      preflight: beat.preflight ? JSON.stringify(beat.preflight) : null,
      // Absent: this runner's SSH server is off (or it predates SSH); owners are shown no command.
      ssh_host: beat.ssh?.host ?? null,
      ssh_port: beat.ssh?.port ?? null,
      last_heartbeat_at: trx.fn.now(),
    });
    const row = { slots_saved: previous.slots_saved, slots_total: beat.slots_total };
    return {
      answer: { slots_configured: row.slots_saved, slots_effective: effectiveSlots(row, beat.slots_total) },
      wasOnline: previous.was_online,
      previousSlotsTotal: previous.slots_total,
      credentialPrefix: previous.credential_prefix,
    };
  });
}
