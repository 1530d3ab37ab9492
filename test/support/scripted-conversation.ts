/**
 * Scripting a tool-calling conversation with the fake upstream: reply builders for `enqueue(...)`
 * (one reply per model call) and a reader of the messages a client sent, to assert that tool
 * results and earlier history went back to the model.
 */
import type { Behaviour, RecordedRequest, ScriptedToolCall } from './fake-upstream';

/** Builders for scripting a tool-calling conversation with `enqueue(...)`, one reply per model call. */
export const scripted = {
  /** The model calls one tool. */
  toolCall: (name: string, args: Record<string, unknown> | string, id?: string): Behaviour =>
    ({ kind: 'tool_calls', calls: [{ name, arguments: args, ...(id ? { id } : {}) }] }),
  /** The model calls several tools at once. */
  toolCalls: (calls: ScriptedToolCall[], content?: string): Behaviour => ({ kind: 'tool_calls', calls, ...(content !== undefined ? { content } : {}) }),
  /** The model answers with text and no tool call (a final answer). */
  finalText: (content: string): Behaviour => ({ kind: 'json', content }),
};

/** A chat message as a client sent it (loosely typed: tests assert on it). */
export interface SentMessage {
  role: string;
  content?: string | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The `messages` of a recorded chat-completions request (empty when absent). */
export function sentMessages(record: RecordedRequest): SentMessage[] {
  const messages = (record.body as { messages?: unknown } | undefined)?.messages;
  return Array.isArray(messages) ? (messages as SentMessage[]) : [];
}

