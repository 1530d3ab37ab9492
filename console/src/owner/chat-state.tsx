/**
 * How the workspace names a chat's and a turn's state: the API's value shown as a word with a
 * colour, never recomputed here (the API decides Queued/Running/Idle/Failed).
 */
import type { JSX } from 'preact';
import { Badge } from '../ui/parts';
import type { ConversationState, TurnState } from './types';

const CHAT: Record<ConversationState, { label: string; tone: 'ok' | 'warn' | 'bad' | 'muted' | 'info' }> = {
  queued: { label: 'Queued', tone: 'muted' },
  running: { label: 'Running', tone: 'info' },
  idle: { label: 'Idle', tone: 'ok' },
  failed: { label: 'Failed', tone: 'bad' },
};

const TURN: Record<TurnState, 'ok' | 'warn' | 'bad' | 'muted' | 'info'> = {
  queued: 'muted', running: 'info', completed: 'ok', failed: 'bad', cancelled: 'warn',
};

/** The chat's conversation state as a badge. */
export function ChatState(props: { state: ConversationState }): JSX.Element {
  const known = CHAT[props.state] ?? { label: props.state, tone: 'muted' as const };
  return <Badge tone={known.tone}>{known.label}</Badge>;
}

/** A turn's state as a badge. */
export function TurnBadge(props: { state: TurnState }): JSX.Element {
  return <Badge tone={TURN[props.state] ?? 'muted'}>{props.state}</Badge>;
}

/** Whether a chat has work under way (its event stream stays open, its page refreshes). */
export function isActive(state: ConversationState | undefined): boolean {
  return state === 'queued' || state === 'running';
}
