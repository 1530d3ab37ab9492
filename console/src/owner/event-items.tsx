/**
 * How each folded chat item looks: assistant messages as text, a tool call as one collapsible
 * item (its input, then its result when it came; "running" until then), retries with their
 * attempt and wait, turn ends and failures with the server's own sentence, notices as small notes.
 * Questions are rendered by the chat page (./question-card.tsx).
 */
import type { JSX } from 'preact';
import { Badge } from '../ui/parts';
import type { ChatItem } from './fold-events';
import type { AgentEvent } from './types';

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value, null, 2);
}

/** One tool call with its result, folded into a `<details>`. */
export function ToolItem(props: { item: Extract<ChatItem, { kind: 'tool' }> }): JSX.Element {
  const { use, result, name } = props.item;
  const failed = result?.is_error === true || result?.payload.is_error === true;
  const status = !result ? 'running…' : failed ? 'error' : 'done';
  const input = use?.payload.input;
  const exit = result?.payload.exit_code;
  return (
    <details class={`tool${failed ? ' failed' : ''}`} data-tool={name}>
      <summary>
        <span class="tool-name">{name}</span>{' '}
        <Badge tone={!result ? 'info' : failed ? 'bad' : 'ok'}>{status}</Badge>
        {typeof exit === 'number' ? <span class="muted"> exit {exit}</span> : null}
        {use?.payload.via === 'mcp_relay' ? <span class="muted"> via MCP</span> : null}
      </summary>
      {use ? <><h4>Input</h4><pre>{str(input)}</pre></> : null}
      {result ? <><h4>Result</h4><pre>{str(result.payload.output)}</pre></> : null}
    </details>
  );
}

function seconds(ms: unknown): string {
  return typeof ms === 'number' ? `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s` : '?';
}

/** Every other event. */
export function EventItem(props: { event: AgentEvent }): JSX.Element | null {
  const { event } = props;
  const p = event.payload;
  switch (event.event_type) {
    case 'message':
      return <div class="msg assistant"><p>{str(p.text)}</p></div>;
    case 'retry':
      return (
        <p class="note warn" role="status">
          Retry {str(p.attempt)}: waiting {seconds(p.wait_ms)}{typeof p.status === 'number' ? ` after HTTP ${p.status}` : ''}{p.reason ? ` (${str(p.reason)})` : ''}
        </p>
      );
    case 'notice':
      return <p class="note muted">Notice: {str(p.kind)}{p.message ? `: ${str(p.message)}` : p.problem ? `: ${str(p.problem)}` : ''}</p>;
    case 'turn_started':
      return <p class="note muted">Turn {event.turn_seq} started.</p>;
    case 'turn_completed':
      return <p class="note ok">Turn {event.turn_seq} completed.</p>;
    case 'turn_failed':
      return <p class="note error" role="alert">Turn {event.turn_seq} failed: {str(p.error)}</p>;
    case 'turn_cancelled':
      return <p class="note warn">Turn {event.turn_seq} cancelled{p.reason ? `: ${str(p.reason)}` : ''}.</p>;
    case 'title_changed':
      return <p class="note muted">Title: {str(p.title)}</p>;
    case 'pull_request':
      return <p class="note">Draft pull request <a href={str(p.url)} rel="noopener noreferrer">#{str(p.number)}</a> on <code>{str(p.branch)}</code>.</p>;
    case 'publish_failed':
      return <p class="note error" role="alert">Not published ({str(p.reason)}): {str(p.message)}</p>;
    default:
      return event.is_error
        ? <p class="note error" role="alert">{event.event_type}: {str(p.error ?? p.message ?? p)}</p>
        : <p class="note muted">{event.event_type}</p>;
  }
}
