/**
 * The conversation facts a chat request contributes to its log row (the automation score reads them):
 * how many `user` turns, how many images (priced per image) and audio clips they carry (both also
 * choose the routes: docs/routing.md "Input modalities"), how many tool calls the history's
 * `assistant` messages made, and a reference to the newest user message. One pass over the
 * messages, no allocation.
 */
import type { RequestRecord } from '../surfaces/request-record';

/** Notes `numUserTurns`, `numToolCalls`, `images`, `audio` and `lastUserMessage` of `messages` on the request's record. */
export function noteChatFacts(state: RequestRecord, messages: readonly unknown[]): void {
  let users = 0;
  let toolCalls = 0;
  let last: unknown;
  let images = 0;
  let audio = 0;
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i] as { role?: unknown; content?: unknown; tool_calls?: unknown };
    if (message.role === 'user') {
      users += 1;
      last = message.content;
      if (Array.isArray(message.content)) {
        const parts = message.content;
        for (let j = 0; j < parts.length; j += 1) {
          const type = (parts[j] as { type?: unknown } | null)?.type;
          if (type === 'image_url') images += 1;
          else if (type === 'input_audio') audio += 1;
        }
      }
    } else if (message.role === 'assistant' && Array.isArray(message.tool_calls)) {
      toolCalls += message.tool_calls.length;
    }
  }
  state.numUserTurns = users;
  state.numToolCalls = toolCalls;
  state.lastUserMessage = last;
  state.images = images;
  state.audio = audio;
}
