/**
 * Receipts of sandbox archives (docs/sandboxes.md "Archives"). An archive exists for the
 * control plane only once the object store has verified the object's exact length and SHA-256 and
 * its receipt is committed; only then does the host remove the container, and a cold group's
 * restore checks the bytes it reads against that receipt. A verification that fails removes the
 * object (no receipt refers to it) so a later try starts clean.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { ObjectTooLargeError, type ObjectStore, type UploadGrant } from '../../lib/object-store';
import { sandboxArchiveKey, type SandboxArchiveReceipt } from '../../workflows/definitions/sandbox-group';

interface ReceiptRow {
  object_key: string;
  bytes: string;
  sha256: string;
}

function receiptFrom(row: ReceiptRow): SandboxArchiveReceipt {
  return { key: row.object_key, length: Number(row.bytes), sha256: row.sha256 };
}

/** The committed receipt of `groupId`'s archive at `generation`. */
export async function receiptOf(db: Db | Knex.Transaction, groupId: string, generation: number): Promise<SandboxArchiveReceipt | undefined> {
  const row = await db('agent_sandbox_archives').where({ group_id: groupId, generation }).first<ReceiptRow | undefined>('object_key', 'bytes', 'sha256');
  return row ? receiptFrom(row) : undefined;
}

/** The newest committed receipt of a group (what a cold group restores). */
export async function latestReceipt(db: Db | Knex.Transaction, groupId: string): Promise<SandboxArchiveReceipt | undefined> {
  const row = await db('agent_sandbox_archives').where({ group_id: groupId }).orderBy('generation', 'desc').first<ReceiptRow | undefined>('object_key', 'bytes', 'sha256');
  return row ? receiptFrom(row) : undefined;
}

export type ArchiveGrant = { kind: 'granted'; grant: UploadGrant } | { kind: 'refused'; reason: string };

/** An upload grant for exactly the spooled archive; above the single-upload limit it is refused (the container stays). */
export async function grantArchiveUpload(
  store: ObjectStore, input: { groupId: string; generation: number; length: number; sha256: string },
): Promise<ArchiveGrant> {
  try {
    return { kind: 'granted', grant: await store.grantUpload(sandboxArchiveKey(input.groupId, input.generation), { length: input.length, sha256: input.sha256 }) };
  } catch (err) {
    if (err instanceof ObjectTooLargeError) return { kind: 'refused', reason: `The archive is ${err.bytes} bytes, above the 5 GiB single-upload limit; the container is kept` };
    throw err;
  }
}

export type ArchiveCommit = { kind: 'committed'; receipt: SandboxArchiveReceipt } | { kind: 'refused'; reason: string };

/**
 * Verifies the uploaded object and commits its receipt, while the group is still archiving at
 * that generation. Idempotent: a receipt already committed for the same object is answered again.
 */
export async function commitArchiveReceipt(
  db: Db, store: ObjectStore, input: { groupId: string; generation: number; length: number; sha256: string },
): Promise<ArchiveCommit> {
  const key = sandboxArchiveKey(input.groupId, input.generation);
  const existing = await receiptOf(db, input.groupId, input.generation);
  if (existing) {
    return existing.length === input.length && existing.sha256 === input.sha256
      ? { kind: 'committed', receipt: existing }
      : { kind: 'refused', reason: `A different archive of generation ${input.generation} is already committed` };
  }
  const verification = await store.verify(key, { length: input.length, sha256: input.sha256 });
  if (verification.status !== 'verified') {
    const reason = verification.status === 'missing'
      ? 'The uploaded archive is not in the object store'
      : `The uploaded archive does not match the spooled one (${verification.reason}: ${verification.bytes} bytes stored, ${input.length} expected)`;
    // Nothing refers to an unverified object: remove it so the next try can upload under the same key.
    await store.delete(key);
    return { kind: 'refused', reason: `${reason}; the container is kept` };
  }
  return db.transaction(async (trx) => {
    const group = await trx('agent_sandboxes').where({ group_id: input.groupId }).forUpdate()
      .first<{ pending_action: string | null; generation: number } | undefined>('pending_action', 'generation');
    if (group?.pending_action !== 'archive_delete' || group.generation !== input.generation) {
      return { kind: 'refused' as const, reason: 'The group is no longer being archived at this generation' };
    }
    await trx('agent_sandbox_archives').insert({
      group_id: input.groupId, generation: input.generation, object_key: key,
      bytes: verification.bytes, sha256: verification.sha256, verified_by: verification.method,
    });
    return { kind: 'committed' as const, receipt: { key, length: verification.bytes, sha256: verification.sha256 } };
  });
}
