/** The normalized event types of a chat's event log (documented in docs/agent-events.md). */
/** Normalized event types every driver emits (documented in docs/agent-events.md). */
export const AGENT_EVENT_TYPES = [
  'turn_queued', 'turn_started', 'message', 'tool_use', 'tool_result', 'retry', 'notice', 'question',
  'turn_completed', 'turn_failed', 'turn_cancelled', 'title_changed', 'pull_request', 'publish_failed',
] as const;
export type AgentEventType = (typeof AGENT_EVENT_TYPES)[number];
