/**
 * Who may open an SSH session into a chat's sandbox, and the audit of each session
 * (docs/ssh.md "Access" and "Audit"). The host runner's SSH server has verified that the client
 * holds the key; this decides, from PostgreSQL, whether that key may reach the chat on that host:
 * the key is registered by the chat's owner (an active account with `agent.use`), the chat is not
 * deleted, and its sandbox group runs on the asking host with no stop or delete under way. Every
 * decision writes one `agent.sandbox.ssh_session_*` audit row (category `sandboxes`, target the chat).
 */
import type { Db } from '../../lib/db';
import { readAccount } from '../../lib/identity/accounts';
import { accountState } from '../../lib/identity/credential-state';
import { recordAudit, type AuditActor } from '../audit/audit-log';
import { newId } from '../jobs/job-store';
import { sshFingerprint } from './ssh-keys';
import type { SshRefusal } from '../../lib/contracts/host-ssh';

/** The system actor of refusals whose key names no owner of the chat (docs/agent-audit.md). */
export const SSH_SERVER_ACTOR = { type: 'system', name: 'ssh-server' } as const satisfies AuditActor;

export const SSH_OPENED = 'agent.sandbox.ssh_session_opened';
export const SSH_CLOSED = 'agent.sandbox.ssh_session_closed';
export const SSH_REFUSED = 'agent.sandbox.ssh_session_refused';

export interface SshOpenRequest {
  hostId: string;
  jobId: string;
  /** The key's SSH wire form, base64. */
  publicKey: string;
  clientAddress?: string;
}

export type SshOpenAnswer =
  | { allowed: true; session_id: string; user_id: number; fingerprint: string; container_name: string; uid: number }
  | { allowed: false; reason: SshRefusal };

interface ChatRow { owner_id: string; deleted: boolean; group_id: string | null; host_id: string | null; state: string | null; pending_action: string | null; container_name: string | null; uid: number | null }
interface Grant { userId: number; keyId: string; groupId: string; containerName: string; uid: number }

/** The chat, its owner's matching key and its sandbox as this host may use them, or why not. */
async function decide(db: Db, request: SshOpenRequest, fingerprint: string, wire: string): Promise<Grant | { reason: SshRefusal; userId?: number }> {
  const chat = await db('agent_jobs as j')
    .leftJoin('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .leftJoin('agent_sandbox_members as m', 'm.job_id', 'j.job_id')
    .where('j.job_id', request.jobId)
    .first<ChatRow | undefined>('j.owner_id', db.raw('(j.deleted_at is not null or exists (select 1 from agent_deletion_requests d where d.job_id = j.job_id)) as deleted'),
      'j.group_id', 's.host_id', 's.state', 's.pending_action', 's.container_name', 'm.uid');
  if (!chat || chat.deleted) return { reason: 'unknown_chat' };
  const userId = Number(chat.owner_id);
  const key = await db('agent_ssh_keys').where({ user_id: userId, fingerprint }).first<{ id: string; public_key: string } | undefined>('id', 'public_key');
  if (!key || key.public_key.split(' ')[1] !== wire) return { reason: 'not_owner' };
  const account = await readAccount(db, userId);
  if (!account || accountState(account) !== 'valid' || !account.permissions.includes('agent.use')) return { reason: 'owner_inactive', userId };
  if (!chat.group_id || !chat.container_name || chat.uid === null) return { reason: 'no_sandbox', userId };
  if (chat.host_id !== request.hostId) return { reason: 'other_host', userId };
  if (chat.state !== 'running' || chat.pending_action !== null) return { reason: 'sandbox_not_running', userId };
  return { userId, keyId: String(key.id), groupId: chat.group_id, containerName: chat.container_name, uid: chat.uid };
}

/** Decides and audits one session request (see the module comment). */
export async function openSshSession(db: Db, request: SshOpenRequest): Promise<SshOpenAnswer> {
  const fingerprint = sshFingerprint(Buffer.from(request.publicKey, 'base64'));
  const decision = await decide(db, request, fingerprint, request.publicKey);
  const base = { actorIp: request.clientAddress ?? null, category: 'sandboxes' as const, target: { type: 'chat', id: request.jobId } };
  if ('reason' in decision) {
    await recordAudit(db, {
      ...base, action: SSH_REFUSED, outcome: 'refused', reason: decision.reason,
      // A key of the chat's owner names them; any other key is the SSH server's refusal of a stranger.
      actor: decision.userId === undefined ? SSH_SERVER_ACTOR : { type: 'user', userId: decision.userId },
      details: { fingerprint, host_id: request.hostId },
    });
    return { allowed: false, reason: decision.reason };
  }
  const sessionId = newId('ssh');
  await db.transaction(async (trx) => {
    await recordAudit(trx, {
      ...base, action: SSH_OPENED, outcome: 'succeeded', actor: { type: 'user', userId: decision.userId },
      details: { session_id: sessionId, fingerprint, key_id: decision.keyId, host_id: request.hostId, group_id: decision.groupId, uid: decision.uid },
    });
    await trx('agent_ssh_keys').where({ id: decision.keyId }).update({ last_used_at: trx.fn.now() });
    // A shell is use of the sandbox: the idle stop counts from its start (docs/ssh.md "Stopping").
    await trx('agent_sandboxes').where({ group_id: decision.groupId }).update({ last_activity_at: trx.fn.now() });
  });
  return { allowed: true, session_id: sessionId, user_id: decision.userId, fingerprint, container_name: decision.containerName, uid: decision.uid };
}

interface OpenedRow { id: string; created_at: Date; actor_user_id: string; target_id: string; details: { fingerprint?: string; host_id?: string; group_id?: string } }

/** Records the end of session `sessionId` of `hostId` once; `recorded: false` when unknown, another host's or already closed. */
export async function closeSshSession(db: Db, input: { hostId: string; jobId: string; sessionId: string; endedBy: string }): Promise<{ recorded: boolean; duration_ms: number | null }> {
  if (!/^ssh_[a-z2-7]{20}$/.test(input.sessionId)) return { recorded: false, duration_ms: null };
  return db.transaction(async (trx) => {
    const opened = await trx('agent_audit_log').where({ action: SSH_OPENED, target_type: 'chat', target_id: input.jobId }).whereRaw(`details->>'session_id' = ?`, [input.sessionId])
      .forUpdate().first<OpenedRow | undefined>('id', 'created_at', 'actor_user_id', 'target_id', 'details');
    if (!opened || opened.details.host_id !== input.hostId) return { recorded: false, duration_ms: null };
    const closed: unknown = await trx('agent_audit_log').where({ action: SSH_CLOSED, target_type: 'chat', target_id: opened.target_id })
      .whereRaw(`details->>'session_id' = ?`, [input.sessionId]).first('id');
    if (closed !== undefined) return { recorded: false, duration_ms: null };
    const durationMs = Math.max(0, Date.now() - opened.created_at.getTime());
    await recordAudit(trx, {
      category: 'sandboxes', action: SSH_CLOSED, outcome: 'succeeded', actor: { type: 'user', userId: Number(opened.actor_user_id) },
      target: { type: 'chat', id: opened.target_id },
      details: { session_id: input.sessionId, fingerprint: opened.details.fingerprint, host_id: input.hostId, duration_ms: durationMs, ended_by: input.endedBy },
    });
    if (opened.details.group_id) await trx('agent_sandboxes').where({ group_id: opened.details.group_id }).update({ last_activity_at: trx.fn.now() });
    return { recorded: true, duration_ms: durationMs };
  });
}
