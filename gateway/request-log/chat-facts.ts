/**
 * The conversation facts a chat request contributes to its log row (spec 2.12 reads them):
 * how many `user` turns, how many images they carry (priced per image), how many tool calls the history's `assistant` messages made, and a
 * reference to the newest user message. One pass over the messages, no allocation.
 */
import type { RequestRecord } from '../surfaces/request-record';

/** Notes `numUserTurns`, `numToolCalls`, `images` and `lastUserMessage` of `messages` on the request's record. */
export function noteChatFacts(state: RequestRecord, messages: readonly unknown[]): void {
  let users = 0;
  let toolCalls = 0;
  let last: unknown;
  let images = 0;
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i] as { role?: unknown; content?: unknown; tool_calls?: unknown };
    if (message.role === 'user') {
      users += 1;
      last = message.content;
      if (Array.isArray(message.content)) images += imageParts(message.content);
    } else if (message.role === 'assistant' && Array.isArray(message.tool_calls)) {
      toolCalls += message.tool_calls.length;
    }
  }
  state.numUserTurns = users;
  state.numToolCalls = toolCalls;
  state.lastUserMessage = last;
  state.images = images;
}

function imageParts(parts: readonly unknown[]): number {
  let n = 0;
  for (let i = 0; i < parts.length; i += 1) if ((parts[i] as { type?: unknown } | null)?.type === 'image_url') n += 1;
  return n;
}
