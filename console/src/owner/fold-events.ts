/**
 * Folds a chat's normalized events (docs/agent-events.md) into what the chat page shows: each
 * `tool_use` and the `tool_result` of the same `tool_use_id` become one tool item (a result whose
 * call was not seen stays an item of its own), `turn_queued` opens a turn with its prompt, and
 * every other event is one item. Pure, so it runs again on each new event.
 */
import type { AgentEvent } from './types';

/** One thing on the chat page. */
export type ChatItem =
  | { kind: 'turn'; key: string; seq: number; prompt: string }
  | { kind: 'tool'; key: string; name: string; use: AgentEvent | undefined; result: AgentEvent | undefined }
  | { kind: 'event'; key: string; event: AgentEvent };

/** A payload field as text (empty unless it is a string). */
export function textOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The page's items, in event order. */
export function foldEvents(events: readonly AgentEvent[]): ChatItem[] {
  const items: ChatItem[] = [];
  const tools = new Map<string, number>();
  for (const event of events) {
    const key = event.event_id;
    const toolId = `${event.attempt_id ?? ''}/${textOf(event.payload.tool_use_id)}`;
    if (event.event_type === 'turn_queued') {
      items.push({ kind: 'turn', key, seq: event.turn_seq, prompt: textOf(event.payload.prompt) });
    } else if (event.event_type === 'tool_use') {
      tools.set(toolId, items.length);
      items.push({ kind: 'tool', key, name: textOf(event.payload.tool_name) || 'tool', use: event, result: undefined });
    } else if (event.event_type === 'tool_result') {
      const at = textOf(event.payload.tool_use_id) ? tools.get(toolId) : undefined;
      const item = at === undefined ? undefined : items[at];
      if (item && item.kind === 'tool' && !item.result) items[at!] = { ...item, result: event };
      else items.push({ kind: 'tool', key, name: textOf(event.payload.tool_name) || 'tool', use: undefined, result: event });
    } else {
      items.push({ kind: 'event', key, event });
    }
  }
  return items;
}
