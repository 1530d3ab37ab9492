/**
 * An owner's MCP connections (`agent_mcp_connections`; docs/mcp.md "Connections"): created from a
 * URL, a stdio template or an imported snippet, listed, read, changed and deleted by their owner
 * only (another owner's connection is 404, like one that does not exist). Header and environment
 * values are sealed with `AGENT_SETTINGS_ENCRYPTION_KEY` (bound to the connection's id) and are
 * write-only: views show their names, never a value.
 */
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { AppError } from '../../lib/errors';
import { SecretSealer } from '../../lib/sealed-secret';
import type { McpStdioTemplates } from '../../lib/settings';
import { newId } from '../jobs/job-store';
import { checkRemoteUrl, headersOfAuth, stdioDraftPart, type ConnectionDraft, type UpdateConnectionInput } from './connection-input';
import type { CapabilitySnapshot } from './capabilities';

/** Most connections one owner may hold. */
export const MAX_CONNECTIONS_PER_OWNER = 100;
export const CONNECTION_ID = /^mcpc_[a-z2-7]{20}$/;

export interface ConnectionRow {
  connection_id: string;
  owner_id: string;
  name: string;
  transport: 'streamable_http' | 'stdio';
  location: 'remote' | 'control_plane' | 'connector';
  source: string;
  endpoint_url: string | null;
  launch: { command: string; args: string[] } | null;
  template: string | null;
  auth_profile: string;
  credentials_sealed: string | null;
  credential_names: { headers: string[]; env: string[] };
  approval_policy: 'none' | 'required';
  connector_id: string | null;
  capabilities: CapabilitySnapshot | null;
  discovered_at: Date | null;
  discovery_error: string | null;
  oauth_sealed: string | null;
  oauth_expires_at: Date | null;
  oauth_authorized_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What the owner sees of a connection: never a credential value. */
export function connectionView(row: ConnectionRow): Record<string, unknown> {
  return {
    connection_id: row.connection_id, name: row.name, transport: row.transport, location: row.location, source: row.source,
    endpoint_url: row.endpoint_url, launch: row.launch, template: row.template, auth_profile: row.auth_profile,
    credentials: { configured: row.credentials_sealed !== null, headers: row.credential_names.headers, env: row.credential_names.env },
    approval_policy: row.approval_policy, connector_id: row.connector_id,
    oauth: { authorized: row.oauth_sealed !== null, authorized_at: row.oauth_authorized_at?.toISOString() ?? null, expires_at: row.oauth_expires_at?.toISOString() ?? null },
    capabilities: row.capabilities, discovered_at: row.discovered_at?.toISOString() ?? null, discovery_error: row.discovery_error,
    created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
  };
}

/** Options every write needs: the sealing key (absent: credentials cannot be stored) and the stdio templates. */
export interface ConnectionStoreOptions {
  sealingKey: string | undefined;
  templates: McpStdioTemplates;
  allowPrivate: boolean;
}

/** The sealer's purpose: MCP credentials get their own key derived from `AGENT_SETTINGS_ENCRYPTION_KEY` (they never open as admin settings). */
const SEAL_PURPOSE = 'agent-mcp-connections-v1';

/** The MCP credentials' sealer, or 503 without `AGENT_SETTINGS_ENCRYPTION_KEY`. */
export function sealerOr503(key: string | undefined): SecretSealer {
  if (!key) throw new AppError('service_unavailable', 'MCP credentials cannot be stored: AGENT_SETTINGS_ENCRYPTION_KEY is not configured on the control-plane API');
  return new SecretSealer(key, SEAL_PURPOSE);
}

const sealName = (connectionId: string) => `mcp-connection:${connectionId}`;

function sealedColumns(connectionId: string, secrets: ConnectionDraft['secrets'], key: string | undefined): { credentials_sealed: string | null; credential_names: string } {
  const names = { headers: Object.keys(secrets.headers), env: Object.keys(secrets.env) };
  if (names.headers.length === 0 && names.env.length === 0) return { credentials_sealed: null, credential_names: JSON.stringify(names) };
  return { credentials_sealed: sealerOr503(key).seal(sealName(connectionId), JSON.stringify(secrets)), credential_names: JSON.stringify(names) };
}

/** The decrypted header and environment values of a connection (for the relay only). */
export function openSecrets(row: Pick<ConnectionRow, 'connection_id' | 'credentials_sealed'>, key: string | undefined): ConnectionDraft['secrets'] {
  if (row.credentials_sealed === null) return { headers: {}, env: {} };
  return JSON.parse(sealerOr503(key).open(sealName(row.connection_id), row.credentials_sealed)) as ConnectionDraft['secrets'];
}

async function lockOwner(trx: Knex.Transaction, ownerId: number, adding: number): Promise<void> {
  await trx('users').where({ id: ownerId }).forUpdate().first('id');
  const count = await trx('agent_mcp_connections').where({ owner_id: ownerId }).count<{ count: string }[]>('* as count').first();
  if (Number(count?.count ?? 0) + adding > MAX_CONNECTIONS_PER_OWNER) throw new AppError('conflict', `At most ${MAX_CONNECTIONS_PER_OWNER} MCP connections per owner`);
}

async function refuseTakenNames(trx: Knex.Transaction, ownerId: number, names: string[], exceptId?: string): Promise<void> {
  const query = trx('agent_mcp_connections').where({ owner_id: ownerId }).whereIn('name', names);
  if (exceptId) query.whereNot('connection_id', exceptId);
  const taken = await query.first<{ name: string } | undefined>('name');
  if (taken) throw new AppError('conflict', `A connection named '${taken.name}' already exists`, { param: 'name' });
}

/** Creates connections from drafts, all or none; 409 for a name taken or the per-owner limit. */
export async function createConnections(db: Db, ownerId: number, drafts: ConnectionDraft[], options: ConnectionStoreOptions): Promise<ConnectionRow[]> {
  const names = drafts.map((d) => d.name);
  if (new Set(names).size !== names.length) throw new AppError('invalid_request', 'Two servers have the same name', { param: 'name' });
  return db.transaction(async (trx) => {
    await lockOwner(trx, ownerId, drafts.length);
    await refuseTakenNames(trx, ownerId, names);
    const rows = drafts.map((d) => {
      const connectionId = newId('mcpc');
      return {
        connection_id: connectionId, owner_id: ownerId, name: d.name, transport: d.transport, location: d.location, source: d.source,
        endpoint_url: d.endpointUrl, launch: d.launch ? JSON.stringify(d.launch) : null, template: d.template, auth_profile: d.authProfile,
        approval_policy: d.approvalPolicy, ...sealedColumns(connectionId, d.secrets, options.sealingKey),
      };
    });
    return trx('agent_mcp_connections').insert(rows).returning<ConnectionRow[]>('*');
  });
}

/** The owner's connection, or 404 (also another owner's). */
export async function findOwnedConnection(db: Db | Knex.Transaction, ownerId: number, connectionId: string): Promise<ConnectionRow> {
  const row = CONNECTION_ID.test(connectionId)
    ? await db('agent_mcp_connections').where({ connection_id: connectionId, owner_id: ownerId }).first<ConnectionRow | undefined>()
    : undefined;
  if (!row) throw new AppError('not_found', 'Connection not found');
  return row;
}

export async function listConnections(db: Db, ownerId: number): Promise<ConnectionRow[]> {
  return db('agent_mcp_connections').where({ owner_id: ownerId }).orderBy('name').select<ConnectionRow[]>('*');
}

export async function deleteConnection(db: Db, ownerId: number, connectionId: string): Promise<void> {
  const row = await findOwnedConnection(db, ownerId, connectionId);
  await db('agent_mcp_connections').where({ connection_id: row.connection_id }).delete();
}

/** The columns an update changes (validated against the row's kind); the snapshot is dropped when the server changes. */
function updateColumns(row: ConnectionRow, input: UpdateConnectionInput, options: ConnectionStoreOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (input.name !== undefined) out.name = input.name;
  if (input.approval_policy !== undefined) out.approval_policy = input.approval_policy;
  if (row.transport === 'stdio' && (input.url !== undefined || input.auth !== undefined)) throw new AppError('invalid_request', 'A stdio connection has no url or auth', { param: input.url !== undefined ? 'url' : 'auth' });
  if (row.transport !== 'stdio' && input.env !== undefined) throw new AppError('invalid_request', 'Only a stdio connection takes env', { param: 'env' });
  if (input.url !== undefined) Object.assign(out, { endpoint_url: checkRemoteUrl(input.url, options.allowPrivate), capabilities: null, discovered_at: null, oauth_sealed: null, oauth_expires_at: null, oauth_authorized_at: null });
  if (input.auth !== undefined) {
    const auth = headersOfAuth(input.auth);
    Object.assign(out, { auth_profile: auth.profile, ...sealedColumns(row.connection_id, { headers: auth.headers, env: {} }, options.sealingKey) });
  }
  if (input.env !== undefined) {
    const part = stdioDraftPart(options.templates, row.template ?? '', input.env, 'env');
    Object.assign(out, sealedColumns(row.connection_id, part.secrets, options.sealingKey));
  }
  return out;
}

/** Changes the owner's connection; connector binding is decided by `bindConnector` (connectors.ts). */
export async function updateConnection(db: Db, ownerId: number, connectionId: string, input: UpdateConnectionInput, options: ConnectionStoreOptions & {
  bindConnector?: (trx: Knex.Transaction, row: ConnectionRow, connectorId: string | null) => Promise<Record<string, unknown>>;
}): Promise<ConnectionRow> {
  return db.transaction(async (trx) => {
    const row = await findOwnedConnection(trx, ownerId, connectionId);
    const columns = updateColumns(row, input, options);
    if (input.name !== undefined) await refuseTakenNames(trx, ownerId, [input.name], row.connection_id);
    // Another server: its OAuth grant is dropped (updateColumns) and so are authorizations still under way.
    if (input.url !== undefined) await trx('agent_mcp_oauth_states').where({ connection_id: row.connection_id }).delete();
    if (input.connector_id !== undefined) {
      if (!options.bindConnector) throw new AppError('invalid_request', 'Connectors cannot be bound here', { param: 'connector_id' });
      Object.assign(columns, await options.bindConnector(trx, row, input.connector_id));
    }
    const [updated] = await trx('agent_mcp_connections').where({ connection_id: row.connection_id })
      .update({ ...columns, updated_at: trx.fn.now() }).returning<ConnectionRow[]>('*');
    return updated!;
  });
}
