/**
 * The diffs turns produced (`agent_turn_patches`; docs/publisher.md): a host uploads what it
 * captured for the attempt it is running, and the publisher reads and settles it. The upload is
 * fenced: only the turn's running attempt on the host that holds it may write, in the same
 * transaction that locks that attempt, so a stale attempt (ended, superseded, or another host's)
 * is refused with 409 and a patch can never be replaced: one row per turn, the first upload wins.
 * A patch too large to publish, or a capture that failed, is told to the owner at once
 * (`publish_failed`, agent/source/publications.ts).
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';
import type { ValidRequestOf } from '../../lib/contracts/endpoint';
import type * as hostApi from '../../lib/contracts/host-api';
import { noteUnpublishable } from './publications';

export type PatchUpload = ValidRequestOf<typeof hostApi.attemptPatch>;
export type PublishState = 'none' | 'pending' | 'published' | 'failed';

/** A turn's patch row as the publisher reads it. */
export interface TurnPatch {
  turn_id: string;
  attempt_id: string;
  job_id: string;
  turn_seq: number;
  capture_state: 'captured' | 'too_large' | 'failed';
  start_tree: string | null;
  end_tree: string | null;
  bytes: string | null;
  patch: Buffer | null;
  publish_state: PublishState;
  publish_error: string | null;
  commit_sha: string | null;
}

/** The row an upload writes: a non-empty captured patch is `pending` publication, anything else `none`. */
function rowOf(upload: PatchUpload, maxBytes: number): Record<string, unknown> {
  if (upload.status === 'failed') return { capture_state: 'failed', capture_error: cleanText(upload.error), publish_state: 'none' };
  if (upload.status === 'too_large') {
    return { capture_state: 'too_large', start_tree: upload.start_tree, end_tree: upload.end_tree, bytes: upload.bytes, publish_state: 'none' };
  }
  const patch = Buffer.from(upload.patch_base64, 'base64');
  if (patch.length !== upload.bytes) throw new AppError('invalid_request', `Invalid field 'bytes': the patch holds ${patch.length} bytes`, { param: 'bytes' });
  if (patch.length > maxBytes) throw new AppError('payload_too_large', `The patch is larger than ${maxBytes} bytes; report it as too_large`);
  if ((patch.length === 0) !== (upload.start_tree === upload.end_tree)) {
    throw new AppError('invalid_request', "Invalid field 'patch_base64': an empty patch goes with equal trees, and only it");
  }
  return {
    capture_state: 'captured', start_tree: upload.start_tree, end_tree: upload.end_tree, bytes: patch.length, patch,
    publish_state: patch.length > 0 ? 'pending' : 'none',
  };
}

/**
 * Stores what host `hostId` captured for `attemptId`; 409 unless that attempt is running on that
 * host and is its turn's attempt of the moment. `stored: false` when the turn already has a row.
 */
export async function storeTurnPatch(db: Db, input: { hostId: string; attemptId: string; upload: PatchUpload; maxBytes: number }): Promise<{ turn_id: string; stored: boolean; publish_state: PublishState }> {
  const row = rowOf(input.upload, input.maxBytes);
  return db.transaction(async (trx) => {
    const attempt = await trx('agent_attempts as a').join('agent_turns as t', 't.turn_id', 'a.turn_id')
      .where('a.attempt_id', input.attemptId).forUpdate()
      .first<{ state: string; host_id: string; turn_id: string; job_id: string; seq: number; turn_attempt: string | null } | undefined>(
        'a.state', 'a.host_id', 'a.turn_id', 'a.job_id', 't.seq', 't.attempt_id as turn_attempt');
    if (!attempt || attempt.host_id !== input.hostId || attempt.state !== 'running' || attempt.turn_attempt !== input.attemptId) {
      throw new AppError('conflict', 'Attempt is not current');
    }
    const inserted = await trx('agent_turn_patches')
      .insert({ ...row, turn_id: attempt.turn_id, attempt_id: input.attemptId, job_id: attempt.job_id, turn_seq: attempt.seq })
      .onConflict('turn_id').ignore().returning<Array<{ publish_state: PublishState }>>('publish_state');
    if (inserted.length > 0) {
      const row = { job_id: attempt.job_id, turn_seq: attempt.seq, turn_id: attempt.turn_id };
      const { upload } = input;
      if (upload.status === 'too_large') await noteUnpublishable(trx, row, { status: 'too_large', bytes: upload.bytes, maxBytes: input.maxBytes });
      if (upload.status === 'failed') await noteUnpublishable(trx, row, { status: 'failed', error: upload.error });
      return { turn_id: attempt.turn_id, stored: true, publish_state: inserted[0]?.publish_state ?? 'pending' };
    }
    const existing = await trx('agent_turn_patches').where({ turn_id: attempt.turn_id }).first<{ publish_state: PublishState } | undefined>('publish_state');
    return { turn_id: attempt.turn_id, stored: false, publish_state: existing?.publish_state ?? 'none' };
  });
}

/** The patch of turn `turnId`, if its host uploaded one. */
export async function findTurnPatch(db: Db | Knex.Transaction, turnId: string): Promise<TurnPatch | undefined> {
  return db('agent_turn_patches').where({ turn_id: turnId }).first<TurnPatch | undefined>(
    'turn_id', 'attempt_id', 'job_id', 'turn_seq', 'capture_state', 'start_tree', 'end_tree', 'bytes', 'patch', 'publish_state', 'publish_error', 'commit_sha');
}
