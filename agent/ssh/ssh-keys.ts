/**
 * Owners' SSH public keys (docs/ssh.md "Keys"): the keys an owner may log into their chats'
 * sandboxes with. Accepted: Ed25519, ECDSA (P-256/384/521) and RSA of at least 3072 bits, in the
 * one-line OpenSSH form (`ssh-ed25519 AAAA… comment`, a `.pub` file). Stored canonical (`type
 * base64`, no comment) with the SHA256 fingerprint `ssh-keygen -l` prints; at most
 * {@link MAX_SSH_KEYS} per owner. Keys are public: listing shows them whole.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { utils, type ParsedKey } from 'ssh2';
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { cleanText } from '../../lib/text';

export const MAX_SSH_KEYS = 10;
export const MIN_RSA_BITS = 3072;
const ACCEPTED_TYPES = ['ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521'] as const;

export const sshKeyBodySchema = z.object({
  /** The public key line (a `.pub` file's content). */
  public_key: z.string().min(1).max(16 * 1024),
  /** A label; the key's comment (or its type) when absent. */
  name: z.string().min(1).max(100).optional(),
}).strict();

export interface PublicKeyFacts {
  keyType: (typeof ACCEPTED_TYPES)[number];
  /** `<type> <base64>` of the key's wire form. */
  publicKey: string;
  fingerprint: string;
  comment: string;
}

/** `SHA256:<unpadded base64>` of an SSH public key's wire form (what `ssh-keygen -l` prints). */
export function sshFingerprint(wire: Buffer): string {
  return `SHA256:${createHash('sha256').update(wire).digest('base64').replace(/=+$/, '')}`;
}

function bad(message: string): AppError {
  return new AppError('invalid_request', message, { param: 'public_key' });
}

/** The parsed public key, or 400 naming why it is refused. */
export function parsePublicKey(text: string): PublicKeyFacts {
  const parsed = utils.parseKey(text.trim()) as ParsedKey | ParsedKey[] | Error;
  if (parsed instanceof Error) throw bad(`public_key is not an SSH public key (${parsed.message}); paste one line of a .pub file, e.g. "ssh-ed25519 AAAA… you@laptop"`);
  if (Array.isArray(parsed)) throw bad('public_key holds more than one key; register them one at a time');
  if (parsed.isPrivateKey()) throw bad('public_key is a private key: never upload it; paste the .pub file instead');
  if (!(ACCEPTED_TYPES as readonly string[]).includes(parsed.type)) {
    throw bad(`public_key has type ${parsed.type}, which is not accepted; use Ed25519 (ssh-keygen -t ed25519), ECDSA or RSA of at least ${MIN_RSA_BITS} bits`);
  }
  if (parsed.type === 'ssh-rsa') {
    const bits = createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw bad(`public_key is an RSA key of ${bits} bits; RSA keys need at least ${MIN_RSA_BITS} bits (or use ssh-keygen -t ed25519)`);
  }
  const wire = parsed.getPublicSSH();
  return {
    keyType: parsed.type as PublicKeyFacts['keyType'], publicKey: `${parsed.type} ${wire.toString('base64')}`,
    fingerprint: sshFingerprint(wire), comment: cleanText(parsed.comment ?? '').trim(),
  };
}

export interface SshKeyView {
  id: string;
  name: string;
  key_type: string;
  public_key: string;
  fingerprint: string;
  created_at: string;
  last_used_at: string | null;
}

interface KeyRow { id: string; name: string; key_type: string; public_key: string; fingerprint: string; created_at: Date; last_used_at: Date | null }
const COLUMNS = ['id', 'name', 'key_type', 'public_key', 'fingerprint', 'created_at', 'last_used_at'];

function view(row: KeyRow): SshKeyView {
  return {
    id: String(row.id), name: row.name, key_type: row.key_type, public_key: row.public_key, fingerprint: row.fingerprint,
    created_at: row.created_at.toISOString(), last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}

export async function listSshKeys(db: Db, ownerId: number): Promise<{ keys: SshKeyView[]; max_keys: number }> {
  const rows = await db('agent_ssh_keys').where({ user_id: ownerId }).orderBy('id').select<KeyRow[]>(COLUMNS);
  return { keys: rows.map(view), max_keys: MAX_SSH_KEYS };
}

/** Registers a key: 400 for a refused key, 409 when already registered or past {@link MAX_SSH_KEYS}. */
export async function addSshKey(db: Db, ownerId: number, body: z.infer<typeof sshKeyBodySchema>): Promise<SshKeyView> {
  const key = parsePublicKey(body.public_key);
  const name = cleanText(body.name ?? '').trim() || key.comment.slice(0, 100) || key.keyType;
  return db.transaction(async (trx) => {
    // One owner's registrations in turn, so two at once cannot both pass the count.
    await trx('users').where({ id: ownerId }).forUpdate().first('id');
    const same: unknown = await trx('agent_ssh_keys').where({ user_id: ownerId, fingerprint: key.fingerprint }).first('id');
    if (same !== undefined) throw new AppError('conflict', `This key (${key.fingerprint}) is already registered`, { param: 'public_key' });
    const count = await trx('agent_ssh_keys').where({ user_id: ownerId }).count<{ count: string }[]>('* as count').first();
    if (Number(count?.count ?? 0) >= MAX_SSH_KEYS) throw new AppError('conflict', `At most ${MAX_SSH_KEYS} SSH keys per owner; delete one first`);
    const [row] = await trx('agent_ssh_keys')
      .insert({ user_id: ownerId, name, key_type: key.keyType, public_key: key.publicKey, fingerprint: key.fingerprint })
      .returning<KeyRow[]>(COLUMNS);
    return view(row!);
  });
}

export async function deleteSshKey(db: Db, ownerId: number, keyId: string): Promise<{ id: string; deleted: true }> {
  if (!/^[1-9][0-9]{0,17}$/.test(keyId)) throw new AppError('not_found', `SSH key ${keyId} not found`);
  const removed = await db('agent_ssh_keys').where({ user_id: ownerId, id: keyId }).delete();
  if (removed === 0) throw new AppError('not_found', `SSH key ${keyId} not found`);
  return { id: keyId, deleted: true };
}
