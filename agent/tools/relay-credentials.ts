/**
 * The tool relay's credentials (docs/mcp.md "Relay credentials"). When a turn's attempt
 * starts, its host fetches, with its own credential and like the inference grant, an attempt-fenced
 * `mcp_…` token and an `amr.…` residency credential (both stored as SHA-256 digests; fetching again
 * rotates both, so the earlier ones stop at once). Each relay call resolves the presented credential
 * again, to the chat's current leased attempt: the attempt `running` (for `mcp_…`: the very attempt it
 * was issued for; for `amr.…`: whichever attempt of the chat runs now on the same host), its turn
 * running, the job not deleted, the host enrolled, heartbeating and not removed, and the chat's
 * sandbox still the same group and generation. Between turns, after rotation, expiry or release,
 * it resolves to nothing: 401.
 */
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { randomBytes } from 'node:crypto';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import type { attemptToolCredentials } from '../../lib/contracts/host-api';
import { residencyAlive } from '../grants/residency';

/** The relay's MCP endpoint (streamable HTTP) under the API's base URL. */
export const RELAY_MCP_PATH = '/v1/agent/mcp/relay/mcp';
/** Extra lifetime of the credentials beyond the turn's time limit (a running attempt never outlives them). */
const EXPIRY_MARGIN_SECONDS = 300;

export type ToolCredentials = ResponseOf<typeof attemptToolCredentials>;

/** What a credential resolved to: the chat's current leased attempt. */
export interface RelayPrincipal {
  kind: 'mcp' | 'residency';
  jobId: string;
  ownerId: number;
  attemptId: string;
  turnSeq: number;
  hostId: string;
  groupId: string;
  generation: number;
}

interface AttemptRow {
  attempt_id: string;
  job_id: string;
  owner_id: string;
  host_id: string;
  group_id: string | null;
  generation: number | null;
  turn_seq: number;
  limits: { turnTimeLimitSeconds?: number } | null;
}

/** The running attempt (of `where`) with its job, turn and sandbox, when the job is live and the turn running. */
function leasedAttempt(db: Db, where: Record<string, string>) {
  return db('agent_attempts as a')
    .join('agent_turns as t', 't.turn_id', 'a.turn_id')
    .join('agent_jobs as j', 'j.job_id', 'a.job_id')
    .leftJoin('agent_sandboxes as s', 's.group_id', 'j.group_id')
    .where(where).where({ 'a.state': 'running', 't.state': 'running' })
    .whereRaw('t.attempt_id = a.attempt_id')
    .whereNull('j.deleted_at')
    .first<AttemptRow | undefined>('a.attempt_id', 'a.job_id', 'j.owner_id', 'a.host_id', 'j.group_id', 's.generation', 't.seq as turn_seq', 'a.limits');
}

/** Issues (rotating) the attempt's relay credentials for its host; 409 `Attempt is not current` otherwise. */
export async function issueToolCredentials(db: Db, options: { hostId: string; attemptId: string; staleSeconds: number; turnTimeLimitSeconds: number }): Promise<ToolCredentials> {
  const row = await leasedAttempt(db, { 'a.attempt_id': options.attemptId, 'a.host_id': options.hostId });
  if (!row || row.group_id === null || row.generation === null) throw new AppError('conflict', 'Attempt is not current');
  const residency = { attemptId: row.attempt_id, hostId: row.host_id, groupId: row.group_id, generation: row.generation };
  if (!(await residencyAlive(db, residency, options.staleSeconds))) throw new AppError('conflict', 'Attempt is not current');
  const lifetime = (row.limits?.turnTimeLimitSeconds ?? options.turnTimeLimitSeconds) + EXPIRY_MARGIN_SECONDS;
  const mcpToken = generateSecret('mcp');
  const residencyCredential = `amr.${randomBytes(32).toString('base64url')}`;
  const common = { job_id: row.job_id, attempt_id: row.attempt_id, host_id: row.host_id, group_id: row.group_id, generation: row.generation };
  const expiresAt = new Date(Date.now() + lifetime * 1000);
  const rows = [
    { credential_id: `mcp:${row.attempt_id}`, kind: 'mcp', token_hash: hashSecret(mcpToken), token_prefix: secretPrefix(mcpToken), ...common, expires_at: expiresAt },
    { credential_id: `amr:${row.job_id}`, kind: 'residency', token_hash: hashSecret(residencyCredential), token_prefix: residencyCredential.slice(0, 10), ...common, expires_at: expiresAt },
  ];
  await db('agent_mcp_credentials').insert(rows).onConflict('credential_id')
    .merge(['token_hash', 'token_prefix', 'attempt_id', 'host_id', 'group_id', 'generation', 'expires_at', 'created_at']);
  return { mcp_token: mcpToken, residency_credential: residencyCredential, expires_at: expiresAt.toISOString(), relay_mcp_path: RELAY_MCP_PATH };
}

interface CredentialRow {
  kind: 'mcp' | 'residency';
  job_id: string;
  attempt_id: string;
  host_id: string;
  group_id: string;
  generation: number;
  expires_at: Date;
}

/** Whether a bearer value has the shape of a relay credential. */
export function isRelayCredential(token: string): boolean {
  return /^mcp_[A-Za-z0-9_-]{43}$/.test(token) || /^amr\.[A-Za-z0-9_-]{43}$/.test(token);
}

const refused = () => new AppError('unauthorized', 'The tool relay credential authorizes nothing now (unknown, rotated, expired, or no attempt of its chat is running in its residency)');

/** Resolves a relay credential to the chat's current leased attempt, or throws 401. One round of queries, done on every call. */
export async function resolveRelayCredential(db: Db, token: string, staleSeconds: number): Promise<RelayPrincipal> {
  if (!isRelayCredential(token)) throw refused();
  const credential = await db('agent_mcp_credentials').where({ token_hash: hashSecret(token) }).where('expires_at', '>', db.fn.now())
    .first<CredentialRow | undefined>('kind', 'job_id', 'attempt_id', 'host_id', 'group_id', 'generation', 'expires_at');
  if (!credential) throw refused();
  const where: Record<string, string> = credential.kind === 'mcp'
    ? { 'a.attempt_id': credential.attempt_id, 'a.host_id': credential.host_id }
    : { 'a.job_id': credential.job_id, 'a.host_id': credential.host_id };
  const attempt = await leasedAttempt(db, where);
  if (!attempt || attempt.job_id !== credential.job_id || attempt.group_id !== credential.group_id || attempt.generation !== credential.generation) throw refused();
  const residency = { attemptId: attempt.attempt_id, hostId: attempt.host_id, groupId: credential.group_id, generation: credential.generation };
  if (!(await residencyAlive(db, residency, staleSeconds))) throw refused();
  return {
    kind: credential.kind, jobId: attempt.job_id, ownerId: Number(attempt.owner_id), attemptId: attempt.attempt_id, turnSeq: attempt.turn_seq,
    hostId: attempt.host_id, groupId: credential.group_id, generation: credential.generation,
  };
}

/** Resolves again after a wait and checks it is still the same attempt and residency generation; 401 otherwise. */
export async function recheckRelayCredential(db: Db, token: string, before: RelayPrincipal, staleSeconds: number): Promise<RelayPrincipal> {
  const now = await resolveRelayCredential(db, token, staleSeconds);
  if (now.attemptId !== before.attemptId || now.generation !== before.generation || now.groupId !== before.groupId) throw refused();
  return now;
}
