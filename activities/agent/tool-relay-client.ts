/**
 * The built-in driver's client of the tool relay (docs/mcp.md "Drivers"): it lists the chat's MCP
 * tools and calls them with the attempt's `mcp_…` token; the relay records the `tool_use` and
 * `tool_result` events itself. A 401 means the attempt is no longer current: the turn stops.
 */
import { cleanText } from '../../lib/text';

/** Where the relay is and the attempt's credential. */
export interface ToolRelayAccess {
  /** The control-plane API's base URL. */
  apiUrl: string;
  /** The attempt-fenced `mcp_…` token. */
  token: string;
}

/** One MCP tool as the model is offered it. */
export interface RelayTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** The relay refused the attempt's credential: the attempt is no longer current. */
export class ToolRelayRefusedError extends Error {
  constructor() {
    super('The tool relay refused this attempt\'s credential: the attempt is no longer current');
    this.name = 'ToolRelayRefusedError';
  }
}

async function relayFetch(access: ToolRelayAccess, path: string, init: RequestInit, signal: AbortSignal): Promise<unknown> {
  const res = await fetch(`${access.apiUrl}${path}`, { ...init, signal, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${access.token}` } });
  const text = await res.text();
  if (res.status === 401) throw new ToolRelayRefusedError();
  if (!res.ok) throw new Error(`The tool relay answered ${res.status}: ${cleanText(text.slice(0, 300))}`);
  return JSON.parse(text) as unknown;
}

/** The chat's MCP tools (empty when the chat has none bound). */
export async function listRelayTools(access: ToolRelayAccess, signal: AbortSignal): Promise<RelayTool[]> {
  const answer = await relayFetch(access, '/v1/agent/mcp/relay/tools', { method: 'GET' }, signal) as { tools?: RelayTool[] };
  return answer.tools ?? [];
}

/** The model's arguments as a JSON object, or undefined when they are not one. */
export function relayArguments(argumentsJson: string): Record<string, unknown> | undefined {
  try {
    const args: unknown = JSON.parse(argumentsJson === '' ? '{}' : argumentsJson);
    return typeof args === 'object' && args !== null && !Array.isArray(args) ? args as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/** Calls one MCP tool through the relay; the output is what the relay recorded. */
export async function callRelayTool(access: ToolRelayAccess, call: { name: string; args: Record<string, unknown>; toolUseId: string }, signal: AbortSignal): Promise<{ output: string; isError: boolean }> {
  const args = call.args;
  const answer = await relayFetch(access, '/v1/agent/mcp/relay/call', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tool: call.name, arguments: args, tool_use_id: call.toolUseId }),
  }, signal) as { output: string; is_error: boolean };
  return { output: answer.output, isError: answer.is_error };
}
