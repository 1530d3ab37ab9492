/**
 * Which of an owner's MCP connections a chat may use (docs/mcp.md "Bindings and approvals"):
 * bindings per conversation, bindings by server name that no single connection answers (kept in
 * `agent_mcp_legacy_bindings` with reason `no_connection` or `ambiguous_connection` and shown to the
 * owner, never used), and the owner's approvals of tools of `approval_policy: required`
 * connections, each recorded with the residency generation it was asked or given in.
 */
import { z } from 'zod';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { findOwnedJob } from '../jobs/job-store';
import { CONNECTION_ID, connectionView, findOwnedConnection, type ConnectionRow } from './connections';
import { CONNECTION_NAME } from './connection-input';
import { TOOL_NAME } from './capabilities';

/** Most connections one chat may be bound to. */
export const MAX_BINDINGS = 16;

export const bindingsSchema = z.object({
  connections: z.array(z.string().regex(CONNECTION_ID, 'must be a connection id')).max(MAX_BINDINGS).default([]),
  servers: z.array(z.string().regex(CONNECTION_NAME, 'must be a server name')).max(MAX_BINDINGS).default([]),
}).strict();

export const approvalSchema = z.object({
  connection_id: z.string().regex(CONNECTION_ID, 'must be a connection id'),
  tool: z.string().regex(TOOL_NAME, 'must be a tool name'),
  decision: z.enum(['approve', 'deny']),
}).strict();

interface LegacyRow { server_name: string; reason: string; candidates: string[] }

/** The chat's bound connections and its unresolved bindings by name. */
export async function listBindings(db: Db, ownerId: number, jobId: string): Promise<Record<string, unknown>> {
  const job = await findOwnedJob(db, jobId, ownerId);
  const rows = await db('agent_mcp_bindings as b').join('agent_mcp_connections as c', 'c.connection_id', 'b.connection_id')
    .where('b.job_id', job.job_id).orderBy('c.name').select<ConnectionRow[]>('c.*');
  const legacy = await db('agent_mcp_legacy_bindings').where({ job_id: job.job_id }).orderBy('server_name').select<LegacyRow[]>('server_name', 'reason', 'candidates');
  return { job_id: job.job_id, connections: rows.map(connectionView), unresolved: legacy };
}

/** Resolves server names against the owner's connection names (case-insensitively). */
async function resolveNames(trx: Knex.Transaction, ownerId: number, names: string[]): Promise<{ ids: string[]; legacy: LegacyRow[] }> {
  const ids: string[] = [];
  const legacy: LegacyRow[] = [];
  for (const name of names) {
    const matches = await trx('agent_mcp_connections').where({ owner_id: ownerId }).whereRaw('lower(name) = lower(?)', [name]).pluck<string[]>('connection_id');
    if (matches.length === 1) ids.push(matches[0]!);
    else legacy.push({ server_name: name, reason: matches.length === 0 ? 'no_connection' : 'ambiguous_connection', candidates: matches.sort() });
  }
  return { ids, legacy };
}

/** Replaces the chat's bindings (ids, and names resolved now); a connection bound to a connector is allowed here and refused at use. */
export async function setBindings(db: Db, ownerId: number, jobId: string, input: z.infer<typeof bindingsSchema>): Promise<Record<string, unknown>> {
  const job = await findOwnedJob(db, jobId, ownerId);
  await db.transaction(async (trx) => {
    for (const [index, id] of input.connections.entries()) {
      await findOwnedConnection(trx, ownerId, id).catch(() => {
        throw new AppError('invalid_request', `Connection ${id} not found`, { param: `connections.${index}` });
      });
    }
    const named = await resolveNames(trx, ownerId, input.servers);
    const ids = [...new Set([...input.connections, ...named.ids])];
    if (ids.length > MAX_BINDINGS) throw new AppError('invalid_request', `At most ${MAX_BINDINGS} connections per chat`, { param: 'connections' });
    await trx('agent_mcp_bindings').where({ job_id: job.job_id }).delete();
    await trx('agent_mcp_legacy_bindings').where({ job_id: job.job_id }).delete();
    if (ids.length > 0) await trx('agent_mcp_bindings').insert(ids.map((id) => ({ job_id: job.job_id, connection_id: id })));
    if (named.legacy.length > 0) {
      await trx('agent_mcp_legacy_bindings').insert(named.legacy.map((l) => ({ job_id: job.job_id, server_name: l.server_name, reason: l.reason, candidates: JSON.stringify(l.candidates) })));
    }
  });
  return listBindings(db, ownerId, jobId);
}

interface ApprovalRow { connection_id: string; tool_name: string; generation: number | null; state: string; requested_at: Date; decided_at: Date | null }

function approvalView(row: ApprovalRow): Record<string, unknown> {
  return {
    connection_id: row.connection_id, tool: row.tool_name, generation: row.generation, state: row.state,
    requested_at: row.requested_at.toISOString(), decided_at: row.decided_at?.toISOString() ?? null,
  };
}

/** The chat's approvals (`pending` only: the relay's waiting requests). */
export async function listApprovals(db: Db, ownerId: number, jobId: string, pendingOnly: boolean): Promise<Record<string, unknown>> {
  const job = await findOwnedJob(db, jobId, ownerId);
  const query = db('agent_mcp_approvals').where({ job_id: job.job_id }).orderBy([{ column: 'requested_at', order: 'desc' }, 'tool_name']);
  if (pendingOnly) query.where({ state: 'pending' });
  return { approvals: (await query.select<ApprovalRow[]>('*')).map(approvalView) };
}

/** The chat's current residency generation (its sandbox's), or null before it has one. */
export async function chatGeneration(db: Db | Knex.Transaction, jobId: string): Promise<number | null> {
  const row = await db('agent_jobs as j').join('agent_sandboxes as s', 's.group_id', 'j.group_id').where('j.job_id', jobId).first<{ generation: number } | undefined>('s.generation');
  return row?.generation ?? null;
}

/**
 * The owner approves or denies a tool for a chat. A pending request keeps the generation it was
 * asked in; a decision given ahead records the chat's current generation.
 */
export async function decideApproval(db: Db, ownerId: number, jobId: string, input: z.infer<typeof approvalSchema>): Promise<Record<string, unknown>> {
  const job = await findOwnedJob(db, jobId, ownerId);
  await findOwnedConnection(db, ownerId, input.connection_id).catch(() => {
    throw new AppError('invalid_request', `Connection ${input.connection_id} not found`, { param: 'connection_id' });
  });
  const state = input.decision === 'approve' ? 'approved' : 'denied';
  const generation = await chatGeneration(db, job.job_id);
  const [row] = await db('agent_mcp_approvals')
    .insert({ job_id: job.job_id, connection_id: input.connection_id, tool_name: input.tool, generation, state, decided_at: db.fn.now(), decided_by: ownerId })
    .onConflict(['job_id', 'connection_id', 'tool_name'])
    .merge({ state, decided_at: db.fn.now(), decided_by: ownerId, generation: db.raw('coalesce(agent_mcp_approvals.generation, excluded.generation)') })
    .returning<ApprovalRow[]>('*');
  return approvalView(row!);
}
