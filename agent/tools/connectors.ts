/**
 * Connectors (docs/mcp.md "Connectors"): a user's machine registration that would run stdio MCP
 * servers on that machine. Registering returns a secret once (stored as its SHA-256 digest); a
 * connector can be renamed and revoked; views report `runtime: "unavailable"` because this
 * deployment runs no connector runtime. Only a stdio connection can be bound to a connector (a
 * remote connection is reached by URL, so binding it is refused), and a bound connection is
 * refused at use.
 */
import { z } from 'zod';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { generateSecret, hashSecret, secretPrefix } from '../../lib/crypto';
import { newId } from '../jobs/job-store';
import type { ConnectionRow } from './connections';

export const CONNECTOR_ID = /^mcpk_[a-z2-7]{20}$/;
/** Most connectors (revoked ones included) per owner. */
export const MAX_CONNECTORS_PER_OWNER = 20;

export const connectorNameSchema = z.object({ name: z.string().trim().min(1).max(100) }).strict();

interface ConnectorRow {
  connector_id: string;
  owner_id: string;
  name: string;
  secret_prefix: string;
  created_at: Date;
  updated_at: Date;
  revoked_at: Date | null;
}

/** What an owner sees of a connector: never the secret (only its prefix). */
export function connectorView(row: ConnectorRow): Record<string, unknown> {
  return {
    connector_id: row.connector_id, name: row.name, secret_prefix: row.secret_prefix, runtime: 'unavailable',
    state: row.revoked_at ? 'revoked' : 'registered', created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

/** Registers a connector; the answer holds its secret, the only time it is shown. */
export async function registerConnector(db: Db, ownerId: number, name: string): Promise<Record<string, unknown>> {
  const secret = generateSecret('mcpk');
  return db.transaction(async (trx) => {
    await trx('users').where({ id: ownerId }).forUpdate().first('id');
    const count = await trx('agent_mcp_connectors').where({ owner_id: ownerId }).count<{ count: string }[]>('* as count').first();
    if (Number(count?.count ?? 0) >= MAX_CONNECTORS_PER_OWNER) throw new AppError('conflict', `At most ${MAX_CONNECTORS_PER_OWNER} connectors per owner`);
    const [row] = await trx('agent_mcp_connectors')
      .insert({ connector_id: newId('mcpk'), owner_id: ownerId, name, secret_hash: hashSecret(secret), secret_prefix: secretPrefix(secret) })
      .returning<ConnectorRow[]>('*');
    return { ...connectorView(row!), secret };
  });
}

/** The owner's connector, or 404 (also another owner's). */
export async function findOwnedConnector(db: Db | Knex.Transaction, ownerId: number, connectorId: string): Promise<ConnectorRow> {
  const row = CONNECTOR_ID.test(connectorId)
    ? await db('agent_mcp_connectors').where({ connector_id: connectorId, owner_id: ownerId }).first<ConnectorRow | undefined>()
    : undefined;
  if (!row) throw new AppError('not_found', 'Connector not found');
  return row;
}

export async function listConnectors(db: Db, ownerId: number): Promise<Record<string, unknown>> {
  const rows = await db('agent_mcp_connectors').where({ owner_id: ownerId }).orderBy('created_at').select<ConnectorRow[]>('*');
  return { connectors: rows.map(connectorView) };
}

export async function renameConnector(db: Db, ownerId: number, connectorId: string, name: string): Promise<Record<string, unknown>> {
  const row = await findOwnedConnector(db, ownerId, connectorId);
  const [updated] = await db('agent_mcp_connectors').where({ connector_id: row.connector_id }).update({ name, updated_at: db.fn.now() }).returning<ConnectorRow[]>('*');
  return connectorView(updated!);
}

/** Revokes a connector (idempotent; the first revocation time is kept). */
export async function revokeConnector(db: Db, ownerId: number, connectorId: string): Promise<Record<string, unknown>> {
  const row = await findOwnedConnector(db, ownerId, connectorId);
  const [updated] = await db('agent_mcp_connectors').where({ connector_id: row.connector_id })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())'), updated_at: db.fn.now() }).returning<ConnectorRow[]>('*');
  return connectorView(updated!);
}

/**
 * The connection columns of binding it to `connectorId` (null: unbinding). 400 for a remote
 * connection; 404 for another owner's connector; 409 for a revoked one.
 */
export async function bindConnectorColumns(trx: Knex.Transaction, ownerId: number, row: ConnectionRow, connectorId: string | null): Promise<Record<string, unknown>> {
  if (connectorId === null) return { connector_id: null, location: row.transport === 'stdio' ? 'control_plane' : 'remote' };
  if (row.transport !== 'stdio') throw new AppError('invalid_request', 'A remote connection cannot be bound to a connector: it is reached by its URL', { param: 'connector_id' });
  const connector = await findOwnedConnector(trx, ownerId, connectorId);
  if (connector.revoked_at) throw new AppError('conflict', 'The connector is revoked');
  return { connector_id: connector.connector_id, location: 'connector' };
}
