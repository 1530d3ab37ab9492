/**
 * The names the model sees for MCP tools (docs/mcp.md "Tool names"): `<connection>__<tool>`, which
 * fits OpenAI-style function names (1–64 of `A-Za-z0-9_-`). A tool name with other characters (MCP
 * allows `.`) has them replaced by `_`; a name that would pass 64 characters, or that two tools of a
 * chat would share, is cut and given `_<6 hex of sha256(connection/tool)>` so it stays unique and
 * stable. The relay maps a name back through the chat's catalog, never by splitting it.
 */
import { createHash } from 'node:crypto';

/** The longest function name the model APIs accept. */
export const MAX_FUNCTION_NAME = 64;

function digest(connection: string, tool: string): string {
  return createHash('sha256').update(`${connection}/${tool}`).digest('hex').slice(0, 6);
}

/** The model-facing name of `tool` of connection `connection` (names unique per chat via `taken`). */
export function qualifiedToolName(connection: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `${connection}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (plain.length <= MAX_FUNCTION_NAME && plain === `${connection}__${tool}` && !taken.has(plain)) return plain;
  const suffix = `_${digest(connection, tool)}`;
  return `${plain.slice(0, MAX_FUNCTION_NAME - suffix.length)}${suffix}`;
}
