/**
 * Owners' global variables: the middle layer of a sandbox's environment (platform base, then these,
 * then the task's own overrides). Values are write-only: they are never returned, only their names
 * and when they changed, since they usually hold credentials for the agent's tools.
 */
import { z } from 'zod';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';

export const MAX_OWNER_VARIABLES = 100;
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Names the platform sets itself; an owner cannot shadow them. */
const RESERVED = new Set(['AGENT_JOB_ID', 'HOME', 'USER', 'PATH', 'LANG', 'TZ']);

export const variableValueSchema = z.object({ value: z.string().max(32_768) }).strict();

export function assertVariableName(name: string): void {
  if (!VARIABLE_NAME.test(name)) throw new AppError('invalid_request', 'Variable names are letters, digits and _ (not starting with a digit), at most 128 characters', { param: 'name' });
  if (RESERVED.has(name)) throw new AppError('invalid_request', `Variable ${name} is set by the platform and cannot be overridden`, { param: 'name' });
}

export async function listVariables(db: Db, ownerId: number): Promise<{ variables: Array<{ name: string; updated_at: string }> }> {
  const rows = await db('agent_owner_variables').where({ user_id: ownerId }).orderBy('name').select<Array<{ name: string; updated_at: Date }>>('name', 'updated_at');
  return { variables: rows.map((r) => ({ name: r.name, updated_at: r.updated_at.toISOString() })) };
}

/** Sets (creates or replaces) a variable; 409 past the per-owner limit. */
export async function setVariable(db: Db, ownerId: number, name: string, value: string): Promise<{ name: string; updated_at: string }> {
  assertVariableName(name);
  return db.transaction(async (trx) => {
    await trx('users').where({ id: ownerId }).forUpdate().first('id');
    const exists: unknown = await trx('agent_owner_variables').where({ user_id: ownerId, name }).first('name');
    if (exists === undefined) {
      const count = await trx('agent_owner_variables').where({ user_id: ownerId }).count<{ count: string }[]>('* as count').first();
      if (Number(count?.count ?? 0) >= MAX_OWNER_VARIABLES) throw new AppError('conflict', `At most ${MAX_OWNER_VARIABLES} variables per owner`);
    }
    const [row] = await trx('agent_owner_variables')
      .insert({ user_id: ownerId, name, value, updated_at: trx.fn.now() })
      .onConflict(['user_id', 'name']).merge(['value', 'updated_at'])
      .returning<Array<{ updated_at: Date }>>('updated_at');
    return { name, updated_at: row!.updated_at.toISOString() };
  });
}

export async function deleteVariable(db: Db, ownerId: number, name: string): Promise<{ name: string; deleted: true }> {
  const removed = await db('agent_owner_variables').where({ user_id: ownerId, name }).delete();
  if (removed === 0) throw new AppError('not_found', `Variable ${name} not found`);
  return { name, deleted: true };
}
