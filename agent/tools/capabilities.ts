/**
 * The capability snapshot of a connection (docs/mcp.md "Discovery"): the tools an MCP server listed,
 * bounded and passed through the text rule before they reach PostgreSQL, since the server is
 * untrusted. A tool whose name is unusable is left out (and counted); descriptions are cut; an input
 * schema that is too large or too deep is replaced by an empty object schema.
 */
import { cleanText, findBadText, jsonDepthExceeds } from '../../lib/text';

/** Most tools kept of one server. */
export const MAX_TOOLS = 128;
/** Characters of a tool description kept. */
export const MAX_DESCRIPTION_CHARS = 2000;
/** Bytes of one tool's input schema (as JSON) kept. */
export const MAX_SCHEMA_BYTES = 16 * 1024;
/** An MCP tool name the relay calls (the MCP specification's recommended characters, at most 128). */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export interface SnapshotTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface CapabilitySnapshot {
  tools: SnapshotTool[];
  /** Tools the server listed that were left out (bad name, or past {@link MAX_TOOLS}). */
  dropped: number;
  server: { name: string; version: string } | null;
}

const EMPTY_SCHEMA = { type: 'object', properties: {} };

function boundedSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return EMPTY_SCHEMA;
  const text = JSON.stringify(schema);
  const bytes = Buffer.from(text);
  if (bytes.length > MAX_SCHEMA_BYTES || jsonDepthExceeds(bytes, 32) || findBadText(schema)) return EMPTY_SCHEMA;
  return JSON.parse(text) as Record<string, unknown>;
}

/** The snapshot of a `tools/list` answer (already shape-checked by the SDK). */
export function snapshotOf(tools: ReadonlyArray<{ name: unknown; description?: unknown; inputSchema?: unknown }>, server: { name?: unknown; version?: unknown } | undefined): CapabilitySnapshot {
  const kept: SnapshotTool[] = [];
  const seen = new Set<string>();
  let dropped = 0;
  for (const tool of tools) {
    const name = typeof tool.name === 'string' ? tool.name : '';
    if (!TOOL_NAME.test(name) || seen.has(name) || kept.length >= MAX_TOOLS) {
      dropped += 1;
      continue;
    }
    seen.add(name);
    const description = typeof tool.description === 'string' ? cleanText(tool.description.slice(0, MAX_DESCRIPTION_CHARS)) : '';
    kept.push({ name, description, input_schema: boundedSchema(tool.inputSchema) });
  }
  const text = (value: unknown) => (typeof value === 'string' ? cleanText(value.slice(0, 200)) : '');
  return { tools: kept, dropped, server: server ? { name: text(server.name), version: text(server.version) } : null };
}
