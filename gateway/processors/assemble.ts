/**
 * Turns parser parts into OpenAI message fields: text totals and `tool_calls` entries with
 * deterministic ids.
 */
import { type ParsedCall, type Part } from './text';
import { type ToolCall } from './types';

/** The text and calls of a list of parts, in order. */
export interface Collected {
  content: string;
  reasoning: string;
  calls: ParsedCall[];
}

/** Concatenates content and reasoning parts and lists the calls. */
export function collect(parts: readonly Part[]): Collected {
  const result: Collected = { content: '', reasoning: '', calls: [] };
  for (const part of parts) {
    if (part.kind === 'content') result.content += part.text;
    else if (part.kind === 'reasoning') result.reasoning += part.text;
    else result.calls.push(part.call);
  }
  return result;
}

/**
 * A deterministic tool call id: `call_`, the last 24 alphanumerics of the completion id, then
 * the choice index (when not 0) and the call's index within the choice.
 */
export function toolCallId(completionId: string, choiceIndex: number, callIndex: number): string {
  const tail = completionId.replace(/[^A-Za-z0-9]/g, '').slice(-24) || 'gw';
  return choiceIndex === 0 ? `call_${tail}_${callIndex}` : `call_${tail}_${choiceIndex}_${callIndex}`;
}

/** An OpenAI tool call for a parsed call; the arguments are serialized as a JSON string. */
export function toToolCall(call: ParsedCall, id: string): ToolCall {
  return { id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } };
}
