/**
 * The tools a chat may use through the relay (docs/mcp.md "The relay"): the snapshot tools of its
 * bound connections, under their model-facing names. A connection bound to a connector, or not
 * discovered yet, offers no tools and is listed as unavailable with the reason.
 */
import type { Db } from '../../lib/db';
import type { ConnectionRow } from './connections';
import { qualifiedToolName } from './tool-names';

export interface CatalogTool {
  /** The model-facing name (`<connection>__<tool>`). */
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  connection: ConnectionRow;
  /** The tool's own name at its server. */
  tool: string;
}

export interface Catalog {
  tools: CatalogTool[];
  unavailable: Array<{ connection_id: string; name: string; reason: string }>;
}

/** Why a bound connection offers no tools now, or undefined when it does. */
export function unavailableReason(row: ConnectionRow): string | undefined {
  if (row.location === 'connector' || row.connector_id !== null) return `Connection '${row.name}' is bound to a connector, and connector runtimes are unavailable on this deployment`;
  if (!row.capabilities) return `Connection '${row.name}' has not been discovered yet (POST /v1/agent/mcp/connections/${row.connection_id}/discover)`;
  return undefined;
}

/** The chat's catalog, in a stable order (connection name, then the server's tool order). */
export async function chatCatalog(db: Db, jobId: string): Promise<Catalog> {
  const rows = await db('agent_mcp_bindings as b').join('agent_mcp_connections as c', 'c.connection_id', 'b.connection_id')
    .where('b.job_id', jobId).orderBy('c.name').select<ConnectionRow[]>('c.*');
  const catalog: Catalog = { tools: [], unavailable: [] };
  const taken = new Set<string>();
  for (const row of rows) {
    const reason = unavailableReason(row);
    if (reason) {
      catalog.unavailable.push({ connection_id: row.connection_id, name: row.name, reason });
      continue;
    }
    for (const tool of row.capabilities?.tools ?? []) {
      const name = qualifiedToolName(row.name, tool.name, taken);
      taken.add(name);
      catalog.tools.push({ name, description: tool.description, input_schema: tool.input_schema, connection: row, tool: tool.name });
    }
  }
  return catalog;
}

/** The catalog tool of a model-facing name; a connector-bound connection's tool is found by `<connection>__<tool>` so its refusal can be reported. */
export async function findCatalogTool(db: Db, jobId: string, name: string): Promise<{ tool?: CatalogTool; refusal?: string }> {
  const catalog = await chatCatalog(db, jobId);
  const tool = catalog.tools.find((t) => t.name === name);
  if (tool) return { tool };
  const blocked = catalog.unavailable.find((u) => name.startsWith(`${u.name}__`));
  return blocked ? { refusal: blocked.reason } : {};
}
