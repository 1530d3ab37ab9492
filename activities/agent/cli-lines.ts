/**
 * The CLI driver's input format, parsed: stdout arrives in arbitrary chunks, is split into lines
 * (bounded: an over-long line is dropped and reported), and each line, one JSON object in the
 * format of docs/agent-events.md, is normalized into a driver event or a run outcome. Pure;
 * nothing here throws on bad input.
 */
import type { AgentEventType } from './types';
import { boundedValue, isRecord, truncateWithMarker } from './driver-text';

/** Longest stdout line kept (bytes of UTF-16 text, close enough); longer lines become a notice. */
export const MAX_LINE_CHARS = 1024 * 1024;
/** Characters of a malformed line quoted in its notice. */
export const NOTICE_EXCERPT_CHARS = 512;
/** Characters of text and tool output kept in one event payload. */
export const MAX_EVENT_TEXT_CHARS = 64 * 1024;

/** One split line, or the report of a line that exceeded {@link MAX_LINE_CHARS}. */
/** A line, or the length of one over the limit with its first {@link OVERSIZED_HEAD_CHARS} characters (enough to say what it was). */
export type SplitLine = { line: string } | { oversized: number; head: string };

export const OVERSIZED_HEAD_CHARS = 256;

/** Splits streamed text into lines, across chunk boundaries, keeping at most `maxLineChars` per line. */
export class LineSplitter {
  private buffer = '';
  private dropping = 0;
  private head = '';

  constructor(private readonly maxLineChars = MAX_LINE_CHARS) {}

  push(chunk: string): SplitLine[] {
    const out: SplitLine[] = [];
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', start)) {
      out.push(this.finish(chunk.slice(start, nl)));
      start = nl + 1;
    }
    this.append(chunk.slice(start));
    return out;
  }

  /** The last line when the stream ended without a newline. */
  end(): SplitLine[] {
    if (this.buffer === '' && this.dropping === 0) return [];
    return [this.finish('')];
  }

  private append(text: string): void {
    if (this.dropping > 0) {
      this.dropping += text.length;
      return;
    }
    if (this.buffer.length + text.length > this.maxLineChars) {
      this.dropping = this.buffer.length + text.length;
      this.head = (this.buffer.length >= OVERSIZED_HEAD_CHARS ? this.buffer : this.buffer + text).slice(0, OVERSIZED_HEAD_CHARS);
      this.buffer = '';
      return;
    }
    this.buffer += text;
  }

  private finish(tail: string): SplitLine {
    this.append(tail);
    const result: SplitLine = this.dropping > 0 ? { oversized: this.dropping, head: this.head } : { line: this.buffer.replace(/\r$/, '') };
    this.buffer = '';
    this.dropping = 0;
    this.head = '';
    return result;
  }
}

/** What one line means. */
export type CliLine =
  | { kind: 'skip' }
  | { kind: 'event'; type: AgentEventType; payload: Record<string, unknown>; isError?: boolean }
  | { kind: 'result'; text: string }
  | { kind: 'error'; retryable: boolean; retryAfter?: number; message: string };

/** Tool names by tool-use id, so `tool_result` events carry the name the CLI gave at `tool_use`. */
export type ToolNames = Map<string, string>;

/** Normalizes one split line. `toolNames` is updated by `tool_use` lines. */
export function normalizeCliLine(split: SplitLine, toolNames: ToolNames): CliLine {
  if ('oversized' in split) return notice('oversized_line', { length: split.oversized });
  const line = split.line.trim();
  if (line === '') return { kind: 'skip' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return malformed(line, 'not JSON');
  }
  if (!isRecord(parsed) || typeof parsed.type !== 'string') return malformed(line, 'not an object with a "type"');
  return normalizeObject(parsed, line, toolNames);
}

function normalizeObject(obj: Record<string, unknown>, line: string, toolNames: ToolNames): CliLine {
  switch (obj.type) {
    case 'assistant':
      if (typeof obj.text !== 'string') return malformed(line, '"assistant" needs "text"');
      return { kind: 'event', type: 'message', payload: { role: 'assistant', text: bound(obj.text) } };
    case 'tool_use': {
      if (typeof obj.id !== 'string' || typeof obj.name !== 'string') return malformed(line, '"tool_use" needs "id" and "name"');
      toolNames.set(obj.id, obj.name);
      return { kind: 'event', type: 'tool_use', payload: { tool_use_id: obj.id, tool_name: obj.name, input: boundedValue(obj.input ?? {}, MAX_EVENT_TEXT_CHARS) } };
    }
    case 'tool_result': {
      if (typeof obj.tool_use_id !== 'string') return malformed(line, '"tool_result" needs "tool_use_id"');
      const isError = obj.is_error === true;
      const output = typeof obj.output === 'string' ? obj.output : JSON.stringify(obj.output ?? '');
      const name = toolNames.get(obj.tool_use_id) ?? (typeof obj.name === 'string' ? obj.name : 'unknown');
      return {
        kind: 'event', type: 'tool_result', isError,
        payload: { tool_use_id: obj.tool_use_id, tool_name: name, output: bound(output), is_error: isError, truncated: output.length > MAX_EVENT_TEXT_CHARS },
      };
    }
    case 'rate_limited':
    case 'error': {
      const retryAfter = typeof obj.retry_after === 'number' && Number.isSafeInteger(obj.retry_after) && obj.retry_after >= 0 ? obj.retry_after : undefined;
      const message = typeof obj.message === 'string' ? obj.message.slice(0, 2000) : obj.type === 'rate_limited' ? 'rate limited' : 'error';
      const retryable = obj.type === 'rate_limited' ? obj.retryable !== false : obj.retryable === true;
      return { kind: 'error', retryable, message, ...(retryAfter !== undefined ? { retryAfter } : {}) };
    }
    case 'result':
      if (typeof obj.text !== 'string') return malformed(line, '"result" needs "text"');
      return { kind: 'result', text: obj.text };
    case 'notice':
      return notice('cli_notice', { message: typeof obj.message === 'string' ? obj.message.slice(0, NOTICE_EXCERPT_CHARS) : '' });
    default:
      return notice('unknown_line', { line_type: String(obj.type).slice(0, 64), excerpt: line.slice(0, NOTICE_EXCERPT_CHARS) });
  }
}

function malformed(line: string, problem: string): CliLine {
  return notice('malformed_line', { problem, excerpt: line.slice(0, NOTICE_EXCERPT_CHARS), length: line.length });
}

function notice(kind: string, details: Record<string, unknown>): CliLine {
  return { kind: 'event', type: 'notice', payload: { kind, ...details } };
}

function bound(text: string): string {
  return truncateWithMarker(text, MAX_EVENT_TEXT_CHARS);
}
