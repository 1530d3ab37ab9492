/**
 * How the relay turns an MCP tool's answer or failure into the text the agent receives and the
 * `tool_result` event records (docs/mcp.md "Results"): text content as is, other content named,
 * structured content as JSON when there is no text; at most {@link RELAY_OUTPUT_MAX_CHARS} characters
 * with a visible marker; cleaned by the text rule. Failures are one plain sentence.
 */
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cleanText } from '../../lib/text';
import { McpAnswerError } from './bounded-transports';
import { failureText } from './discovery';

/** Characters of one tool result the relay returns and records. */
export const RELAY_OUTPUT_MAX_CHARS = 64 * 1024;
/** Characters of a call's arguments (as JSON) kept in its `tool_use` event. */
export const RELAY_INPUT_EVENT_CHARS = 64 * 1024;

/** `text` cut to `max` characters with a visible marker. */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[truncated ${text.length - max} chars]`;
}

function contentText(item: CallToolResult['content'][number]): string {
  switch (item.type) {
    case 'text': return item.text;
    case 'image':
    case 'audio': return `[${item.type} ${item.mimeType}, ${item.data.length} base64 characters]`;
    case 'resource': return 'text' in item.resource ? item.resource.text : `[resource ${item.resource.uri}]`;
    case 'resource_link': return `[resource link ${item.uri}]`;
    default: return '[content of an unknown type]';
  }
}

/** The output text of a tool's answer (bounded, cleaned) and whether the server said it failed. */
export function resultOutput(result: CallToolResult): { output: string; isError: boolean } {
  const parts = result.content.map(contentText);
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return { output: cleanText(cut(parts.join('\n'), RELAY_OUTPUT_MAX_CHARS)), isError: result.isError === true };
}

/** The sentence reported for a failed call (the model and the owner see it). */
export function failureOutput(err: unknown, timeoutSeconds: number): string {
  if (err instanceof McpError && err.code === Number(ErrorCode.RequestTimeout)) return `The MCP tool call did not finish within ${timeoutSeconds} s and was cut.`;
  if (err instanceof McpAnswerError) return `The MCP tool call failed: ${failureText(err)}`;
  if (err instanceof Error && err.name === 'ZodError') return 'The MCP tool call failed: the server\'s answer is not a valid tool result.';
  return `The MCP tool call failed: ${failureText(err)}`;
}

/** A call's arguments as its `tool_use` event shows them (bounded). */
export function inputForEvent(args: Record<string, unknown>): Record<string, unknown> {
  const json = JSON.stringify(args);
  return json.length <= RELAY_INPUT_EVENT_CHARS ? args : { truncated: true, excerpt: cleanText(cut(json, RELAY_INPUT_EVENT_CHARS)) };
}
